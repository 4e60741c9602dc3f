import http from 'node:http';
import zlib from 'node:zlib';
import { Validator } from '@seriousme/openapi-schema-validator';
import { SignJWT, importJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../platform/ids.js';
import { openApiDocument } from '../../rest-compat/openapi.logic.js';
import { ROUTES } from '../../rest-compat/route-table.js';
import { courseRow } from '../support/course-row.js';
import type { TestDatabase } from '../support/database.js';
import { contractChecker, type Answer } from '../support/openapi-contract.js';
import { startSystemWithDatabase, type SystemProcess } from '../support/system-process.js';

/**
 * The contract test of the REST door: the running process serves its OpenAPI document at
 * /openapi.json, and every route's real answers over HTTP — its successes and the errors a client
 * can cause — are what that document says: a status documented for the route, a body valid
 * against the schema documented for its media type (a problem's `code` among those listed for the
 * status), and every required header present. A route without cases here fails the suite.
 * Outages (503) are provoked by test/faults/dependency-loss.test.ts, not here.
 */
const tenant = newId('tenant');
const otherTenant = newId('tenant');
const ALL_SCOPES = 'catalog.read catalog.admin ai.assist ai.admin ai.audit';

let system: SystemProcess;
let db: TestDatabase;
let close: () => Promise<void>;
let token: string;
let check: ReturnType<typeof contractChecker>;
let served: Record<string, unknown>;

interface Call {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  raw?: string;
  /** Authorization header value; `null` sends none. */
  authorization?: string | null;
  tenantId?: string | null;
  key?: string | null;
}

async function request(path: string, options: Call = {}): Promise<Answer> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = {};
  const authorization = options.authorization === undefined ? `Bearer ${token}` : options.authorization;
  if (authorization !== null) headers.authorization = authorization;
  if (options.tenantId !== null) headers['x-tenant-id'] = options.tenantId ?? tenant;
  if (method !== 'GET' && options.key !== null) headers['idempotency-key'] = options.key ?? newUlid();
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${system.baseUrl}${path}`, { method, headers: { ...headers, ...options.headers }, body });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

interface Case {
  label: string;
  status: number;
  send(): Promise<Answer>;
}

const fixture = {
  courseId: newId('course'),
  archivedCourseId: newId('course'),
  etag: '"contract-etag"',
  provenanceId: '',
  ruleId: '',
};

const course = (id: string, state = 'registered') =>
  courseRow(tenant, {
    id,
    title: { en: 'Contract', fr: 'Contrat' },
    state,
    ...(id === fixture.courseId ? { etag: fixture.etag } : {}),
  });

const ASSIST = {
  featureKey: 'portal.triage',
  variables: { message: 'A headache since Monday' },
  context: { facilityId: 'fac-1', specialty: 'general' },
};
const QUOTA_PATH = '/v1/admin/quota';
const QUOTA = { enabled: false, requestsPerMinute: 60, tokensPerDay: 0 };
const RULE = { residency: 'CONTRACT', primary: { provider: 'mock', model: 'contract' }, fallbacks: [] };

/** What a client can get wrong on any non-public route, and what it answers. */
function requestRuleCases(path: string, method = 'GET', body?: unknown): Case[] {
  let expired = '';
  return [
    { label: 'no token', status: 401, send: () => request(path, { method, body, authorization: null }) },
    { label: 'a forged token', status: 401, send: () => request(path, { method, body, authorization: 'Bearer abc.def.ghi' }) },
    {
      label: 'an expired token',
      status: 401,
      send: async () => {
        const now = Math.floor(Date.now() / 1000);
        expired ||= await new SignJWT({ sub: 'svc:contract', tid: tenant, scope: ALL_SCOPES, iat: now - 900, exp: now - 60 })
          .setProtectedHeader({ alg: 'EdDSA', kid: system.keys.privateJwk.kid })
          .sign(await importJWK(system.keys.privateJwk, 'EdDSA'));
        return request(path, { method, body, authorization: `Bearer ${expired}` });
      },
    },
    { label: 'no X-Tenant-Id', status: 400, send: () => request(path, { method, body, tenantId: null }) },
    { label: 'another tenant', status: 403, send: () => request(path, { method, body, tenantId: otherTenant }) },
    {
      label: 'no accepted scope',
      status: 403,
      send: async () =>
        request(path, { method, body, authorization: `Bearer ${await system.mintToken(tenant, 'unrelated.scope')}` }),
    },
  ];
}

/** The Idempotency-Key and body rules of a keyed write; `other` is another valid body. */
function keyedWriteCases(
  path: string,
  method: string,
  body: unknown,
  other: unknown,
  headers: Record<string, string> = {},
): Case[] {
  return [
    { label: 'no Idempotency-Key', status: 400, send: () => request(path, { method, body, headers, key: null }) },
    {
      label: 'a malformed Idempotency-Key',
      status: 400,
      send: () => request(path, { method, body, headers, key: 'not-a-ulid' }),
    },
    { label: 'a body that is not JSON', status: 400, send: () => request(path, { method, raw: '{"a":', headers }) },
    {
      label: 'a form body',
      status: 415,
      send: () =>
        request(path, { method, raw: 'a=1', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' } }),
    },
    {
      label: 'a body over the limit',
      status: 413,
      send: () => request(path, { method, raw: `"${'x'.repeat(1_100_000)}"`, headers }),
    },
    {
      label: 'a used key with another request',
      status: 422,
      send: async () => {
        const key = newUlid();
        const first = await request(path, { method, body, headers, key });
        expect(first.status, first.text).toBeLessThan(300);
        return request(path, { method, body: other, headers, key });
      },
    },
  ];
}

const coursePath = () => `/api/v1/courses/${fixture.courseId}`;
const merge = (ifMatch: string) => ({ 'if-match': ifMatch, 'content-type': 'application/merge-patch+json' });

/** Route id → the requests that reach each documented answer of the route. */
const CASES: Record<string, () => Case[]> = {
  'courses.list': () => [
    { label: 'a page', status: 200, send: () => request('/api/v1/courses?limit=2') },
    { label: 'the last page', status: 200, send: () => request('/api/v1/courses?limit=100') },
    { label: 'limit 0', status: 400, send: () => request('/api/v1/courses?limit=0') },
    { label: 'an unknown parameter', status: 400, send: () => request('/api/v1/courses?page=2') },
    { label: 'a forged cursor', status: 400, send: () => request('/api/v1/courses?cursor=bm90LWEtY3Vyc29y') },
    ...requestRuleCases('/api/v1/courses'),
  ],
  'courses.get': () => [
    { label: 'the course', status: 200, send: () => request(coursePath(), { headers: { 'accept-language': 'fr' } }) },
    {
      label: 'If-None-Match with the ETag',
      status: 304,
      send: () => request(coursePath(), { headers: { 'if-none-match': fixture.etag } }),
    },
    {
      label: 'If-None-Match with another ETag',
      status: 200,
      send: () => request(coursePath(), { headers: { 'if-none-match': '"x"' } }),
    },
    { label: 'an absent course', status: 404, send: () => request(`/api/v1/courses/${newId('course')}`) },
    { label: 'a malformed id', status: 400, send: () => request('/api/v1/courses/nope') },
    ...requestRuleCases(coursePath()),
  ],
  'courses.update': () => [
    {
      label: 'a JSON patch with the current ETag',
      status: 200,
      send: async () => {
        const current = await request(coursePath());
        return request(coursePath(), {
          method: 'PATCH',
          body: { tags: ['a'] },
          headers: { 'if-match': current.headers.get('etag')! },
        });
      },
    },
    {
      label: 'a merge patch with If-Match *',
      status: 200,
      send: () => request(coursePath(), { method: 'PATCH', body: { title: { de: 'Vertrag' } }, headers: merge('*') }),
    },
    {
      label: 'a replayed write',
      status: 200,
      send: async () => {
        const key = newUlid();
        await request(coursePath(), { method: 'PATCH', body: { tags: ['b'] }, headers: { 'if-match': '*' }, key });
        const replay = await request(coursePath(), { method: 'PATCH', body: { tags: ['b'] }, headers: { 'if-match': '*' }, key });
        expect(replay.headers.get('idempotent-replayed')).toBe('true');
        return replay;
      },
    },
    { label: 'no If-Match', status: 428, send: () => request(coursePath(), { method: 'PATCH', body: { tags: ['c'] } }) },
    {
      label: 'a stale If-Match',
      status: 412,
      send: () => request(coursePath(), { method: 'PATCH', body: { tags: ['c'] }, headers: { 'if-match': '"stale"' } }),
    },
    {
      label: 'a stale If-Match, merge patch',
      status: 412,
      send: () => request(coursePath(), { method: 'PATCH', body: { tags: ['c'] }, headers: merge('"stale"') }),
    },
    {
      label: 'a JSON Patch document',
      status: 415,
      send: () =>
        request(coursePath(), {
          method: 'PATCH',
          raw: '[]',
          headers: { 'if-match': '*', 'content-type': 'application/json-patch+json' },
        }),
    },
    {
      label: 'an unknown member',
      status: 400,
      send: () => request(coursePath(), { method: 'PATCH', body: { slug: 'x' }, headers: { 'if-match': '*' } }),
    },
    {
      label: 'a title without the default locale (the catalog refuses)',
      status: 400,
      send: () => request(coursePath(), { method: 'PATCH', body: { title: { fr: 'Seul' } }, headers: { 'if-match': '*' } }),
    },
    {
      label: 'an absent course',
      status: 404,
      send: () =>
        request(`/api/v1/courses/${newId('course')}`, { method: 'PATCH', body: { tags: ['x'] }, headers: { 'if-match': '*' } }),
    },
    {
      label: 'an archived course',
      status: 409,
      send: () =>
        request(`/api/v1/courses/${fixture.archivedCourseId}`, {
          method: 'PATCH',
          body: { tags: ['x'] },
          headers: { 'if-match': '*' },
        }),
    },
    ...keyedWriteCases(coursePath(), 'PATCH', { tags: ['k'] }, { tags: ['k2'] }, { 'if-match': '*' }),
    ...requestRuleCases(coursePath(), 'PATCH', { tags: ['x'] }),
  ],
  'ai.assist': () => [
    { label: 'a released output', status: 200, send: () => request('/v1/ai/assist', { method: 'POST', body: ASSIST }) },
    {
      label: 'an output held for review',
      status: 202,
      send: () =>
        request('/v1/ai/assist', {
          method: 'POST',
          body: {
            featureKey: 'virtual_care.soap_scaffold',
            variables: { transcript: 'visit' },
            context: { facilityId: 'f', specialty: 'gp' },
          },
        }),
    },
    {
      label: 'a missing template variable',
      status: 400,
      send: () => request('/v1/ai/assist', { method: 'POST', body: { ...ASSIST, variables: {} } }),
    },
    {
      label: 'a missing member',
      status: 400,
      send: () => request('/v1/ai/assist', { method: 'POST', body: { featureKey: 'portal.triage' } }),
    },
    {
      label: 'a feature without a template',
      status: 422,
      send: () => request('/v1/ai/assist', { method: 'POST', body: { ...ASSIST, featureKey: 'contract.unknown_feature' } }),
    },
    ...keyedWriteCases('/v1/ai/assist', 'POST', ASSIST, { ...ASSIST, variables: { message: 'Another question' } }),
    ...requestRuleCases('/v1/ai/assist', 'POST', ASSIST),
  ],
  'ai.provenance.get': () => [
    { label: 'a record', status: 200, send: () => request(`/v1/ai/provenance/${fixture.provenanceId}`) },
    { label: 'an absent record', status: 404, send: () => request(`/v1/ai/provenance/${newId('provenance')}`) },
    { label: 'a malformed id', status: 400, send: () => request('/v1/ai/provenance/prv_nope') },
    ...requestRuleCases(`/v1/ai/provenance/${newId('provenance')}`),
  ],
  'ai.provenance.receipt': () => [
    { label: 'a receipt', status: 200, send: () => request(`/v1/ai/provenance/${fixture.provenanceId}/receipt`) },
    { label: 'an absent record', status: 404, send: () => request(`/v1/ai/provenance/${newId('provenance')}/receipt`) },
    { label: 'a malformed id', status: 400, send: () => request('/v1/ai/provenance/prv_nope/receipt') },
    ...requestRuleCases(`/v1/ai/provenance/${newId('provenance')}/receipt`),
  ],
  'ai.receipts.export': () => {
    const path = `/v1/ai/receipts/export?from=${new Date(Date.now() - 3_600_000).toISOString()}&to=${new Date(Date.now() + 3_600_000).toISOString()}`;
    return [
      { label: 'an export', status: 200, send: () => request(path) },
      { label: 'no range', status: 400, send: () => request('/v1/ai/receipts/export') },
      ...requestRuleCases(path),
    ];
  },
  'ai.receipts.jwks': () => [
    {
      label: 'without credentials',
      status: 200,
      send: () => request('/v1/ai/receipts/jwks.json', { authorization: null, tenantId: null }),
    },
    {
      label: 'an unknown parameter',
      status: 400,
      send: () => request('/v1/ai/receipts/jwks.json?all=1', { authorization: null, tenantId: null }),
    },
  ],
  'ai.quota.get': () => [
    { label: 'the settings', status: 200, send: () => request(QUOTA_PATH) },
    {
      label: 'If-None-Match with the ETag',
      status: 304,
      send: async () => request(QUOTA_PATH, { headers: { 'if-none-match': (await request(QUOTA_PATH)).headers.get('etag')! } }),
    },
    { label: 'an unknown parameter', status: 400, send: () => request(`${QUOTA_PATH}?tenant=x`) },
    ...requestRuleCases(QUOTA_PATH),
  ],
  'ai.quota.put': () => [
    {
      label: 'the settings with the current ETag',
      status: 200,
      send: async () =>
        request(QUOTA_PATH, {
          method: 'PUT',
          body: QUOTA,
          headers: { 'if-match': (await request(QUOTA_PATH)).headers.get('etag')! },
        }),
    },
    { label: 'no If-Match', status: 428, send: () => request(QUOTA_PATH, { method: 'PUT', body: QUOTA }) },
    {
      label: 'a stale If-Match',
      status: 412,
      send: () => request(QUOTA_PATH, { method: 'PUT', body: QUOTA, headers: { 'if-match': '"stale"' } }),
    },
    {
      label: 'a missing member',
      status: 400,
      send: () => request(QUOTA_PATH, { method: 'PUT', body: { enabled: true }, headers: { 'if-match': '*' } }),
    },
    ...keyedWriteCases(QUOTA_PATH, 'PUT', QUOTA, { ...QUOTA, tokensPerDay: 2 }, { 'if-match': '*' }),
    ...requestRuleCases(QUOTA_PATH, 'PUT', QUOTA),
  ],
  'ai.routing-rules.create': () => [
    {
      label: 'a new rule',
      status: 201,
      send: async () => {
        const answer = await request('/v1/admin/routing-rules', { method: 'POST', body: { ...RULE, residency: 'CONTRACT_NEW' } });
        expect(answer.headers.get('location')).toMatch(/^\/v1\/admin\/routing-rules\/rtr_/);
        return answer;
      },
    },
    {
      label: 'a second rule for the same feature and residency',
      status: 409,
      send: () => request('/v1/admin/routing-rules', { method: 'POST', body: RULE }),
    },
    {
      label: 'a target without a model',
      status: 400,
      send: () => request('/v1/admin/routing-rules', { method: 'POST', body: { ...RULE, primary: { provider: 'mock' } } }),
    },
    ...keyedWriteCases(
      '/v1/admin/routing-rules',
      'POST',
      { ...RULE, residency: 'CONTRACT_KEYED' },
      { ...RULE, residency: 'CONTRACT_OTHER' },
    ),
    ...requestRuleCases('/v1/admin/routing-rules', 'POST', RULE),
  ],
  'ai.routing-rules.get': () => [
    { label: 'a rule', status: 200, send: () => request(`/v1/admin/routing-rules/${fixture.ruleId}`) },
    { label: 'an absent rule', status: 404, send: () => request(`/v1/admin/routing-rules/${newId('routingRule')}`) },
    { label: 'a malformed id', status: 400, send: () => request('/v1/admin/routing-rules/rule-1') },
    ...requestRuleCases(`/v1/admin/routing-rules/${fixture.ruleId}`),
  ],
  'catalog.dlq.replay': () => [
    {
      label: 'a dry run',
      status: 200,
      send: () => request('/admin/v1/catalog/dlq/replay', { method: 'POST', body: { dryRun: true } }),
    },
    {
      label: 'a backwards time range',
      status: 400,
      send: () =>
        request('/admin/v1/catalog/dlq/replay', {
          method: 'POST',
          body: { from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' },
        }),
    },
    ...keyedWriteCases('/admin/v1/catalog/dlq/replay', 'POST', { dryRun: true, maxCount: 5 }, { dryRun: true, maxCount: 6 }),
    ...requestRuleCases('/admin/v1/catalog/dlq/replay', 'POST', { dryRun: true }),
  ],
  'ai.health': () => [
    { label: 'without credentials', status: 200, send: () => request('/v1/ai/health', { authorization: null, tenantId: null }) },
    // Its documented 4xx: the route declares no query parameters, so it refuses one.
    {
      label: 'an unknown parameter',
      status: 400,
      send: () => request('/v1/ai/health?verbose=1', { authorization: null, tenantId: null }),
    },
  ],
};

beforeAll(async () => {
  ({ system, db, close } = await startSystemWithDatabase());
  token = await system.mintToken(tenant, ALL_SCOPES);
  await db.prisma.course.createMany({ data: [course(fixture.courseId), course(fixture.archivedCourseId, 'archived')] });
  await db.prisma.hITLPolicy.create({
    data: {
      id: newId('hitlPolicy'),
      tenantId: tenant,
      featureKey: 'virtual_care.soap_scaffold',
      mode: 'required',
      updatedBy: 'contract',
    },
  });
  const assisted = await request('/v1/ai/assist', { method: 'POST', body: ASSIST });
  fixture.provenanceId = JSON.parse(assisted.text).provenanceId;
  const rule = await request('/v1/admin/routing-rules', { method: 'POST', body: RULE });
  fixture.ruleId = JSON.parse(rule.text).ruleId;
  const response = await fetch(`${system.baseUrl}/openapi.json`);
  expect(response.status).toBe(200);
  served = (await response.json()) as Record<string, unknown>;
  check = contractChecker(served);
});

afterAll(async () => close?.());

describe('the OpenAPI contract of the running REST door', () => {
  it('serves the document of the route table at /openapi.json, without a token, valid OpenAPI 3.1', async () => {
    expect(served).toEqual(JSON.parse(JSON.stringify(openApiDocument(ROUTES))));
    const result = await new Validator().validate(structuredClone(served));
    expect(result.errors ?? []).toEqual([]);
  });

  it('serves /openapi.json gzip- or brotli-compressed as Accept-Encoding asks, identity otherwise', async () => {
    const raw = (acceptEncoding?: string) =>
      new Promise<{ encoding: string | undefined; vary: string | undefined; body: Buffer }>((resolve, reject) => {
        const url = new URL('/openapi.json', system.baseUrl);
        http
          .get(url, { headers: acceptEncoding ? { 'accept-encoding': acceptEncoding } : {} }, (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('end', () =>
              resolve({
                encoding: response.headers['content-encoding'],
                vary: response.headers.vary,
                body: Buffer.concat(chunks),
              }),
            );
          })
          .on('error', reject);
      });
    const plain = await raw();
    expect(plain.encoding).toBeUndefined();
    expect(plain.vary).toMatch(/Accept-Encoding/);
    const gz = await raw('gzip');
    expect(gz.encoding).toBe('gzip');
    expect(zlib.gunzipSync(gz.body).equals(plain.body)).toBe(true);
    expect(gz.body.length).toBeLessThan(plain.body.length / 3);
    const br = await raw('gzip, br');
    expect(br.encoding).toBe('br');
    expect(zlib.brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
  });

  it('refuses a compressed request body with 415 request.unsupported_content_encoding', async () => {
    const answer = await request('/v1/admin/routing-rules', {
      method: 'POST',
      raw: zlib.gzipSync(JSON.stringify(RULE)).toString('latin1'),
      headers: { 'content-encoding': 'gzip' },
    });
    expect(answer.status).toBe(415);
    expect(JSON.parse(answer.text)).toMatchObject({ code: 'request.unsupported_content_encoding' });
    expect(check({ method: 'POST', path: '/v1/admin/routing-rules' }, answer)).toEqual([]);
  });

  it('has cases for every route of the table, and none for a route that is gone', () => {
    expect(ROUTES.map((route) => route.id).filter((id) => !CASES[id])).toEqual([]);
    expect(Object.keys(CASES).filter((id) => !ROUTES.some((route) => route.id === id))).toEqual([]);
  });

  it.each(ROUTES.map((route) => [route.id, `${route.method} ${route.path}`]))(
    '%s (%s): every answer is the documented status, schema and headers',
    async (id) => {
      const route = ROUTES.find((candidate) => candidate.id === id)!;
      const cases = CASES[id]();
      const statuses = new Set<number>();
      for (const c of cases) {
        const answer = await c.send();
        expect(answer.status, `${id}, ${c.label}: ${answer.text.slice(0, 300)}`).toBe(c.status);
        expect(check({ method: route.method, path: route.path }, answer), `${id}, ${c.label}`).toEqual([]);
        statuses.add(answer.status);
      }
      // Each documented success is reached; every non-public route shows its refusals too.
      const successes = Object.keys(route.responses)
        .map(Number)
        .filter((status) => status < 400);
      expect([...statuses].filter((status) => successes.includes(status)).sort(), id).toEqual(successes.sort());
      if (!route.public)
        expect(
          [...statuses].some((status) => status >= 400),
          id,
        ).toBe(true);
    },
  );
});
