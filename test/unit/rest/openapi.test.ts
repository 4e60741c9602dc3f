import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { openApiDocument, routeErrors } from '../../../rest-compat/openapi.logic.js';
import type { Route } from '../../../rest-compat/route-definition.js';
import { ROUTES } from '../../../rest-compat/route-table.js';
import { assistBody } from '../../../rest-compat/schemas.js';
import { compileValidator } from '../../../rest-compat/validation.js';
import { contractChecker } from '../../support/openapi-contract.js';
import { lintOpenApi } from '../../support/openapi-lint.js';

// Bodies and operations are read member by member from the generated JSON.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const document = openApiDocument(ROUTES) as any;
const operationOf = (route: Route) => document.paths[route.path][route.method.toLowerCase()];

describe('the OpenAPI document of the REST table', () => {
  it('is a valid OpenAPI 3.1 document (@seriousme/openapi-schema-validator)', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('holds JSON Schemas that compile under strict 2020-12 rules', () => {
    const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, validateFormats: false });
    // Component refs resolve against the document; each schema object is compiled where it stands.
    const rebased = JSON.parse(JSON.stringify(document).replaceAll('#/components/schemas/', 'urn:test:doc#/$defs/'));
    ajv.addSchema({ $id: 'urn:test:doc', $defs: rebased.components.schemas });
    const schemas: unknown[] = [];
    for (const methods of Object.values(rebased.paths) as Array<Record<string, Record<string, unknown>>>) {
      for (const op of Object.values(methods)) {
        for (const parameter of op.parameters as Array<{ schema?: unknown }>)
          if (parameter.schema) schemas.push(parameter.schema);
        const body = op.requestBody as { content: Record<string, { schema: unknown }> } | undefined;
        for (const media of Object.values(body?.content ?? {})) schemas.push(media.schema);
        for (const response of Object.values(op.responses as Record<string, { content?: Record<string, { schema: unknown }> }>)) {
          for (const media of Object.values(response.content ?? {})) schemas.push(media.schema);
        }
      }
    }
    expect(schemas.length).toBeGreaterThan(40);
    for (const schema of schemas) expect(() => ajv.compile(schema as object), JSON.stringify(schema).slice(0, 200)).not.toThrow();
  });

  it('describes every route: its scopes, its answers with schemas, its headers and its problem codes by status', () => {
    for (const route of ROUTES) {
      const op = operationOf(route);
      expect(op?.operationId, route.id).toBe(route.id);
      const success = Object.keys(route.responses).filter((status) => status.startsWith('2'));
      for (const status of success) {
        const mediaType = route.responses[Number(status)].mediaType ?? 'application/json';
        expect(op.responses[status].content[mediaType].schema, route.id).toBeDefined();
      }
      if (route.public) expect(op.security, route.id).toEqual([]);
      else expect(op.security, route.id).toEqual(route.scopes!.map((scope) => ({ bearerAuth: [scope], tenantId: [] })));
      for (const [status, codes] of Object.entries(routeErrors(route))) {
        const schema = op.responses[status].content['application/problem+json'].schema;
        expect(schema.properties.code.enum, `${route.id} ${status}`).toEqual(codes);
        expect(schema.allOf, route.id).toEqual([{ $ref: '#/components/schemas/Problem' }]);
      }
      const headerNames = (op.parameters as Array<{ $ref?: string; name?: string }>).map((p) => p.$ref ?? p.name);
      expect(headerNames.includes('#/components/parameters/IdempotencyKey'), route.id).toBe(
        !route.public && route.method !== 'GET',
      );
      expect(headerNames.includes('#/components/parameters/IfMatch'), route.id).toBe(route.ifMatch === true);
      expect(op.responses['401']?.headers['WWW-Authenticate']?.required ?? false, route.id).toBe(!route.public);
      for (const response of Object.values(op.responses) as Array<{ headers: Record<string, { required: boolean }> }>) {
        expect(response.headers.traceparent.required, route.id).toBe(true);
      }
    }
    expect(document.components.securitySchemes).toMatchObject({
      bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      tenantId: { type: 'apiKey', in: 'header', name: 'X-Tenant-Id' },
    });
  });

  it('documents the conventions: Location on 201 and 202, 304 with its ETag on GETs that have one, both PATCH media types', () => {
    const byId = (id: string) => operationOf(ROUTES.find((route) => route.id === id)!);
    expect(byId('ai.routing-rules.create').responses['201'].headers.Location.required).toBe(true);
    expect(byId('ai.assist').responses['202'].headers.Location.required).toBe(true);
    const course = byId('courses.get');
    expect(course.responses['304']).toMatchObject({ headers: { ETag: { required: true } } });
    expect(course.responses['304'].content).toBeUndefined();
    expect(course.parameters).toContainEqual({ $ref: '#/components/parameters/IfNoneMatch' });
    expect(byId('courses.list').responses['304']).toBeUndefined();
    expect(Object.keys(byId('courses.update').requestBody.content)).toEqual(['application/json', 'application/merge-patch+json']);
    expect(byId('courses.update').responses['200'].headers['Idempotent-Replayed']).toMatchObject({ required: false });
  });

  it('refuses a route added without its answers documented, without scopes, or with mismatched path parameters', () => {
    const [model] = ROUTES;
    const broken: Array<[string, Route]> = [
      ['no successful answer', { ...model, id: 'x.none', path: '/x', responses: {} }],
      ['an answer without a schema', { ...model, id: 'x.bare', path: '/x', responses: { 200: { description: 'ok' } } }],
      ['no scopes', { ...model, id: 'x.open', path: '/x', scopes: undefined }],
      ['a path parameter without a schema', { ...model, id: 'x.param', path: '/x/{id}' }],
      ['a path taken twice', { ...model, id: 'x.twice' }],
    ];
    for (const [what, route] of broken) expect(() => openApiDocument([...ROUTES, route]), what).toThrow(/REST route x\./);
  });

  it("passes the checks of Redocly's recommended ruleset that apply to it, warnings included", () => {
    // A quick, dependency-free copy of the rules that can fire on a document like ours; the real
    // Redocly linter runs in test/integration/rest/openapi-clients.test.ts.
    expect(lintOpenApi(structuredClone(document))).toEqual([]);
  });

  it('has a lint that fails on what Redocly (or openapi-typescript) would flag', () => {
    const planted = structuredClone(document);
    delete planted.info.license;
    planted.servers = [{ url: '/api/' }];
    planted.tags[0].description = '';
    const health = planted.paths['/v1/ai/health'].get;
    for (const status of Object.keys(health.responses)) if (status.startsWith('4')) delete health.responses[status];
    delete health.summary;
    planted.paths['/v1/ai/assist'].post.requestBody.content['application/json'].schema.properties.variables = { type: 'object' };
    planted.components.parameters.Unused = { name: 'X-Unused', in: 'header', schema: { type: 'string' } };
    const rules = lintOpenApi(planted).map((finding) => finding.split(':')[0]);
    expect(new Set(rules)).toEqual(
      new Set([
        'info-license',
        'no-server-trailing-slash',
        'tag-description',
        'operation-4xx-response',
        'operation-summary',
        'object-admits-no-member',
        'no-unused-components',
      ]),
    );
  });

  it('names its server, its licence and its tags', () => {
    expect(document.servers).toEqual([{ url: '/', description: expect.stringMatching(/\S/) }]);
    expect(document.info.license).toEqual({ name: 'Proprietary', identifier: 'LicenseRef-Proprietary' });
    const tags = new Set(ROUTES.map((route) => route.id.split('.')[0]));
    expect(document.tags.map((tag: { name: string }) => tag.name).sort()).toEqual([...tags].sort());
    const broken = { ...ROUTES[0], id: 'untagged.route', path: '/x' };
    expect(() => openApiDocument([...ROUTES, broken])).toThrow(/describe its tag untagged/);
  });

  it('types the assist variables as the route takes them: by name, values rendered by the template', () => {
    const variables = operationOf(ROUTES.find((route) => route.id === 'ai.assist')!).requestBody.content['application/json']
      .schema.properties.variables;
    const types = variables.additionalProperties.anyOf.map((member: { type: string }) => member.type);
    expect(types).toEqual(['string', 'number', 'boolean', 'object', 'array', 'null']);
    const validate = compileValidator(assistBody, 'body');
    const body = (vars: unknown) => ({
      featureKey: 'clinical.summary',
      context: { facilityId: 'f', specialty: 's' },
      variables: vars,
    });
    expect(() => validate(body({ message: 'cough', days: 3, urgent: true, __mock: { latencyMs: 1 } }))).not.toThrow();
    expect(() => validate(body({ 'not a name': 'x' }))).toThrow(/variables/);
  });

  it('lists 400 request.validation_failed on every route: each refuses an unknown query parameter', () => {
    for (const route of ROUTES) expect(routeErrors(route)[400], route.id).toContain('request.validation_failed');
  });

  it('lets the contract checker find what differs from the document', () => {
    const check = contractChecker(document);
    const headers = (more: Record<string, string> = {}) =>
      new Headers({ traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`, 'x-request-id': 'r', ...more });
    const get = { method: 'GET', path: '/api/v1/courses/{courseId}' };
    const problem = (code: string) =>
      JSON.stringify({ type: `urn:problem:${code}`, title: 'Not Found', status: 404, detail: 'x', code });
    const json = { 'content-type': 'application/problem+json; charset=utf-8' };
    expect(check(get, { status: 404, headers: headers(json), text: problem('request.not_found') })).toEqual([]);
    expect(check(get, { status: 404, headers: headers(json), text: problem('request.conflict') })[0]).toMatch(/does not match/);
    expect(check(get, { status: 418, headers: headers(), text: '' })[0]).toMatch(/not documented/);
    expect(check(get, { status: 304, headers: headers(), text: '' })).toEqual([
      'GET /api/v1/courses/{courseId} → 304: header ETag is missing',
    ]);
  });
});
