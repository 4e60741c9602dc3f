import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ExecuteOperation, OperationResult } from '../../../gateway/execute-port.js';
import { gatewayContext, type GatewayContext } from '../../../gateway/forwarding.js';
import { frontDoor } from '../../../gateway/front-door/pipeline.js';
import { generateEd25519, mintToken } from '../../../platform/auth/dev-keys.js';
import { createTokenVerifier } from '../../../platform/auth/verifier.js';
import { serve } from '../../../platform/http/serve.js';
import { createDatabaseIdempotencyStore } from '../../../platform/idempotency/database-store.js';
import type { IdempotencyStore } from '../../../platform/idempotency/store.js';
import { newId, newUlid } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { openApiDocument } from '../../../rest-compat/openapi.logic.js';
import { restEndpoints } from '../../../rest-compat/rest-endpoints.js';
import { ROUTES } from '../../../rest-compat/route-table.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { contractChecker } from '../../support/openapi-contract.js';

/**
 * The REST door (the gateway's front door with the route table) against a scripted execute port:
 * each test decides what the GraphQL operation answers and when, so the ordering rules (in flight,
 * replay before If-Match, what is stored) are checked deterministically, without timing.
 */
type Outcome = OperationResult;
type Script = (variables: Record<string, unknown>, context: GatewayContext) => Promise<Outcome>;

const tenant = newId('tenant');
const COURSE = {
  courseId: newId('course'),
  slug: 'intro',
  title: { en: 'Intro', fr: 'Intro FR' },
  description: { en: 'D' },
  defaultLocale: 'en',
  visibility: 'org',
  authors: [],
  taxonomy: [],
  tags: ['a'],
  cover: null,
  etag: '"v2"',
  sourceDraftId: null,
  localizedTitle: { locale: 'fr', text: 'Intro FR' },
  localizedDescription: { locale: 'en', text: 'D' },
};

let db: TestDatabase;
let server: http.Server;
let baseUrl: string;
let token: string;
let otherCallerToken: string;
let readerToken: string;
let storeOverride: IdempotencyStore | undefined;
const scripts = new Map<string, Script>();
const calls: Array<{ operation: string; variables: Record<string, unknown>; forward: Record<string, string> }> = [];

beforeAll(async () => {
  db = await createTestDatabase();
  const keys = await generateEd25519();
  const verifier = await createTokenVerifier({
    publicKey: JSON.stringify(keys.publicJwk),
    maxTokenLifetimeSeconds: 900,
    clockToleranceSeconds: 5,
  });
  token = await mintToken(keys.privateJwk, { sub: 'svc:a', tid: tenant, scope: 'ai.admin catalog.admin ai.assist' });
  otherCallerToken = await mintToken(keys.privateJwk, { sub: 'svc:b', tid: tenant, scope: 'ai.admin' });
  readerToken = await mintToken(keys.privateJwk, { sub: 'svc:r', tid: tenant, scope: 'catalog.read' });
  const realStore = createDatabaseIdempotencyStore(db.prisma, { ttlSeconds: 86_400, leaseSeconds: 60 });
  const store: IdempotencyStore = {
    kind: 'database',
    leaseMs: realStore.leaseMs,
    begin: (...args) => (storeOverride ?? realStore).begin(...args),
    complete: (...args) => (storeOverride ?? realStore).complete(...args),
    release: (...args) => (storeOverride ?? realStore).release(...args),
    renew: (...args) => (storeOverride ?? realStore).renew(...args),
  };
  const execute: ExecuteOperation = async (request, exchange, options) => {
    const context = gatewayContext(exchange, { trusted: options?.trusted === true, ifMatch: options?.ifMatch });
    const operation = /(?:query|mutation) (\w+)/.exec(request.query ?? '')?.[1] ?? '?';
    calls.push({ operation, variables: request.variables ?? {}, forward: context.forward });
    const script = scripts.get(operation);
    if (!script)
      return { errors: [{ message: `Cannot query field on Mutation`, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }] };
    return script(request.variables ?? {}, context);
  };
  const handler = frontDoor({
    logger: silentLogger,
    verifier,
    idempotency: store,
    corsOrigins: [],
    maxBodyBytes: 2048,
    endpoints: [restEndpoints({ execute, aiBaseUrl: 'http://127.0.0.1:9/' })],
  });
  server = http.createServer();
  serve(server, handler, { logger: silentLogger });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await db?.close();
});

beforeEach(() => {
  scripts.clear();
  calls.length = 0;
  storeOverride = undefined;
});

function post(path: string, body: unknown, headers: Record<string, string> = {}, method = 'POST') {
  return fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'x-tenant-id': tenant, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const RULE = { primary: { provider: 'mock', model: 'mock-1' }, fallbacks: [] };
const ruleCreated = (): Outcome => ({
  data: {
    createRoutingRule: {
      ruleId: newId('routingRule'),
      tenantId: tenant,
      featureKey: null,
      residency: null,
      activeVersion: 1,
      versions: [],
    },
  },
});

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('REST idempotency rules', () => {
  it('answers 409 while the first request runs, 422 for another body, then replays the stored response byte for byte', async () => {
    const started = deferred<void>();
    const release = deferred<Outcome>();
    scripts.set('RestCreateRoutingRule', async () => {
      started.resolve();
      return release.promise;
    });
    const key = newUlid();
    const first = post('/v1/admin/routing-rules', RULE, { 'idempotency-key': key });
    await started.promise;

    const concurrent = await post('/v1/admin/routing-rules', RULE, { 'idempotency-key': key });
    expect(concurrent.status).toBe(409);
    // What is left of the first request's 60 s lease: it started moments ago.
    expect(Number(concurrent.headers.get('retry-after'))).toBeGreaterThanOrEqual(55);
    expect(Number(concurrent.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(await concurrent.json()).toMatchObject({ code: 'idempotency.in_flight', status: 409 });
    const reused = await post('/v1/admin/routing-rules', { ...RULE, featureKey: 'portal.triage' }, { 'idempotency-key': key });
    expect(reused.status).toBe(422);
    expect(await reused.json()).toMatchObject({ code: 'idempotency.key_reused' });

    release.resolve(ruleCreated());
    const original = await first;
    expect(original.status).toBe(201);
    expect(original.headers.get('idempotent-replayed')).toBeNull();
    const originalBody = Buffer.from(await original.arrayBuffer());

    // Same request, members reordered: the canonical body is the same.
    const replay = await post('/v1/admin/routing-rules', '{"fallbacks":[],"primary":{"model":"mock-1","provider":"mock"}}', {
      'idempotency-key': `"${key}"`,
    });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('content-type')).toBe(original.headers.get('content-type'));
    expect(Buffer.from(await replay.arrayBuffer()).equals(originalBody)).toBe(true);
    expect(calls.filter((c) => c.operation === 'RestCreateRoutingRule')).toHaveLength(1);
  });

  it('scopes keys by caller: another caller with the same key runs its own request', async () => {
    scripts.set('RestCreateRoutingRule', async () => ruleCreated());
    const key = newUlid();
    expect((await post('/v1/admin/routing-rules', RULE, { 'idempotency-key': key })).status).toBe(201);
    const other = await post('/v1/admin/routing-rules', RULE, {
      'idempotency-key': key,
      authorization: `Bearer ${otherCallerToken}`,
    });
    expect(other.status).toBe(201);
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    expect(calls).toHaveLength(2);
  });

  it('does not store validation failures: the corrected request may reuse the key', async () => {
    scripts.set('RestCreateRoutingRule', async () => ruleCreated());
    const key = newUlid();
    const invalid = await post('/v1/admin/routing-rules', { ...RULE, primary: { provider: 'mock' } }, { 'idempotency-key': key });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ code: 'request.validation_failed', path: '/primary/model' });
    expect(calls).toHaveLength(0);
    expect((await post('/v1/admin/routing-rules', RULE, { 'idempotency-key': key })).status).toBe(201);
  });

  it('frees the key after a server error or a refusal, so a retry runs again', async () => {
    let attempt = 0;
    scripts.set('RestAssist', async () => {
      attempt += 1;
      if (attempt === 1) throw new Error('subgraph exploded');
      if (attempt === 2)
        return {
          errors: [{ message: 'Too many requests', extensions: { code: 'quota.exceeded', status: 429, retryAfterSeconds: 7 } }],
        };
      return { data: { assist: { provenanceId: newId('provenance'), status: 'pending_review' } } };
    });
    const body = { featureKey: 'portal.triage', variables: { message: 'x' }, context: { facilityId: 'f', specialty: 's' } };
    const key = newUlid();
    const crashed = await post('/v1/ai/assist', body, { 'idempotency-key': key });
    expect(crashed.status).toBe(500);
    const crashBody = await crashed.json();
    expect(crashBody).toMatchObject({ code: 'INTERNAL_SERVER_ERROR' });
    expect(JSON.stringify(crashBody)).not.toContain('exploded');
    const limited = await post('/v1/ai/assist', body, { 'idempotency-key': key });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    const accepted = await post('/v1/ai/assist', body, { 'idempotency-key': key });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get('location')).toMatch(/^\/v1\/ai\/provenance\/prv_/);
    expect(attempt).toBe(3);
  });

  it('stores a 412 outcome and replays it', async () => {
    scripts.set('RestUpdateCourseMetadata', async () => ({
      errors: [{ message: 'stale', extensions: { code: 'request.precondition_failed', status: 412, etag: '"v2"' } }],
    }));
    const key = newUlid();
    const path = `/api/v1/courses/${COURSE.courseId}`;
    const stale = await post(path, { tags: ['b'] }, { 'idempotency-key': key, 'if-match': '"v1"' }, 'PATCH');
    expect(stale.status).toBe(412);
    expect(await stale.json()).toMatchObject({ code: 'request.precondition_failed', etag: '"v2"' });
    const again = await post(path, { tags: ['b'] }, { 'idempotency-key': key, 'if-match': '"v1"' }, 'PATCH');
    expect(again.status).toBe(412);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(calls).toHaveLength(1);
  });

  it('checks the replay before If-Match; a missing If-Match is 428 and not stored', async () => {
    scripts.set('RestUpdateCourseMetadata', async (variables, context) => {
      expect(context.forward['if-match']).toBe('"v1"');
      return { data: { updateCourseMetadata: { ...COURSE, tags: (variables.input as { tags: string[] }).tags } } };
    });
    const path = `/api/v1/courses/${COURSE.courseId}`;
    const key = newUlid();
    const missing = await post(path, { tags: ['b'] }, { 'idempotency-key': key }, 'PATCH');
    expect(missing.status).toBe(428);
    expect(await missing.json()).toMatchObject({ code: 'request.precondition_required' });
    expect(calls).toHaveLength(0);

    const updated = await post(path, { tags: ['b'] }, { 'idempotency-key': key, 'if-match': '"v1"' }, 'PATCH');
    expect(updated.status).toBe(200);
    expect(updated.headers.get('etag')).toBe('"v2"');
    expect(updated.headers.get('content-language')).toBe('fr, en');
    expect(((await updated.json()) as { tags: string[] }).tags).toEqual(['b']);
    // The retry of a completed write replays even though its If-Match is now stale or absent.
    const replay = await post(path, { tags: ['b'] }, { 'idempotency-key': key }, 'PATCH');
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('etag')).toBe('"v2"');
    expect(calls).toHaveLength(1);
  });

  it('answers 501 for an operation the graph does not offer, and frees the key', async () => {
    const key = newUlid();
    for (let i = 0; i < 2; i++) {
      const response = await post('/admin/v1/catalog/dlq/replay', { dryRun: true }, { 'idempotency-key': key });
      expect(response.status).toBe(501);
      expect(await response.json()).toMatchObject({ code: 'request.not_implemented', status: 501 });
    }
    expect(calls).toHaveLength(2);
  });

  it('refuses writes with 503 when the store is down, and runs nothing', async () => {
    scripts.set('RestCreateRoutingRule', async () => ruleCreated());
    storeOverride = {
      kind: 'redis',
      leaseMs: 60_000,
      renew: async () => false,
      begin: async () => {
        throw new Error('ECONNREFUSED');
      },
      complete: async () => false,
      release: async () => false,
    };
    const response = await post('/v1/admin/routing-rules', RULE, { 'idempotency-key': newUlid() });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.json()).toMatchObject({ code: 'dependency.unavailable' });
    expect(calls).toHaveLength(0);
  });
});

describe('REST request rules before execution', () => {
  it('authenticates: 401 without a valid token, 400 without X-Tenant-Id, 403 for another tenant', async () => {
    const noToken = await fetch(`${baseUrl}/api/v1/courses`);
    expect(noToken.status).toBe(401);
    expect(noToken.headers.get('content-type')).toContain('application/problem+json');
    const forged = await fetch(`${baseUrl}/api/v1/courses`, {
      headers: { authorization: 'Bearer abc.def.ghi', 'x-tenant-id': tenant },
    });
    expect(forged.status).toBe(401);
    const noTenant = await fetch(`${baseUrl}/api/v1/courses`, { headers: { authorization: `Bearer ${token}` } });
    expect(noTenant.status).toBe(400);
    const otherTenant = await fetch(`${baseUrl}/api/v1/courses`, {
      headers: { authorization: `Bearer ${token}`, 'x-tenant-id': newId('tenant') },
    });
    expect(otherTenant.status).toBe(403);
    expect(await otherTenant.json()).toMatchObject({ code: 'authz.tenant_not_a_member' });
    expect(calls).toHaveLength(0);
  });

  it('requires a ULID Idempotency-Key on writes', async () => {
    const missing = await post('/v1/admin/routing-rules', RULE);
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ code: 'idempotency.key_required' });
    const invalid = await post('/v1/admin/routing-rules', RULE, { 'idempotency-key': 'not-a-ulid' });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ code: 'idempotency.key_invalid' });
    expect(calls).toHaveLength(0);
  });

  it('accepts JSON only, within the size limit', async () => {
    const key = newUlid();
    const text = await post('/v1/admin/routing-rules', 'primary=mock', { 'idempotency-key': key, 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(await text.json()).toMatchObject({ code: 'request.unsupported_media_type' });
    const big = await post('/v1/admin/routing-rules', { ...RULE, featureKey: 'a'.repeat(4096) }, { 'idempotency-key': key });
    expect(big.status).toBe(413);
    const broken = await post('/v1/admin/routing-rules', '{"primary":', { 'idempotency-key': key });
    expect(broken.status).toBe(400);
    const empty = await post('/v1/admin/routing-rules', '', { 'idempotency-key': key });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ code: 'request.validation_failed', path: '' });
    expect(calls).toHaveLength(0);
  });

  it('validates path and query: bad ids, unknown or repeated parameters, malformed escapes', async () => {
    const get = (path: string) =>
      fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}`, 'x-tenant-id': tenant } });
    const cases: Array<[string, string]> = [
      ['/api/v1/courses/nope', '/courseId'],
      ['/api/v1/courses/%E0%A4%A', '/courseId'],
      ['/api/v1/courses?limit=0', '/limit'],
      ['/api/v1/courses?limit=20&limit=30', '/limit'],
      ['/api/v1/courses?page=2', '/page'],
      ['/v1/ai/provenance/crs_01JD0000000000000000000000', '/provenanceId'],
    ];
    for (const [path, pointer] of cases) {
      const response = await get(path);
      expect(response.status, path).toBe(400);
      expect(await response.json(), path).toMatchObject({ code: 'request.validation_failed', path: pointer });
    }
    expect(calls).toHaveLength(0);
  });

  it('answers 405 with Allow for a known path and another method, and 404 for an unknown path', async () => {
    const response = await fetch(`${baseUrl}/api/v1/courses/${COURSE.courseId}`, { method: 'DELETE' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, PATCH');
    const unknown = await fetch(`${baseUrl}/api/v2/courses`);
    expect(unknown.status).toBe(404);
  });

  it('reads each REST page as one GraphQL page of its limit, as a trusted operation', async () => {
    const ids = Array.from({ length: 250 }, () => newId('course'));
    const firsts: number[] = [];
    const trusted: Array<boolean | undefined> = [];
    scripts.set('RestCourses', async (variables, context) => {
      const first = variables.first as number;
      firsts.push(first);
      trusted.push(context.trustedOperation);
      const start = variables.after ? ids.indexOf(variables.after as string) + 1 : 0;
      const slice = ids.slice(start, start + first);
      return {
        data: {
          courses: {
            edges: slice.map((id) => ({ cursor: id, node: { ...COURSE, courseId: id } })),
            pageInfo: { hasNextPage: start + first < ids.length, endCursor: slice.at(-1) ?? null },
          },
        },
      };
    });
    const headers = { authorization: `Bearer ${token}`, 'x-tenant-id': tenant };
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await fetch(`${baseUrl}/api/v1/courses?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { headers });
      expect(page.status).toBe(200);
      const body = (await page.json()) as { items: Array<{ courseId: string }>; nextCursor: string | null };
      expect(body.items.length).toBe(Math.min(100, ids.length - seen.length));
      seen.push(...body.items.map((item) => item.courseId));
      cursor = body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids);
    expect(firsts).toEqual([100, 100, 100]);
    expect(trusted).toEqual([true, true, true]);
  });

  it('maps GraphQL answers to REST: 404 for an absent course, the course with a strong ETag otherwise', async () => {
    scripts.set('RestCourse', async (variables) => ({
      data: { course: variables.courseId === COURSE.courseId ? COURSE : null },
    }));
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const headers = {
      authorization: `Bearer ${token}`,
      'x-tenant-id': tenant,
      'accept-language': 'fr',
      traceparent: `00-${traceId}-b7ad6b7169203331-01`,
    };
    const absent = await fetch(`${baseUrl}/api/v1/courses/${newId('course')}`, { headers });
    expect(absent.status).toBe(404);
    expect(await absent.json()).toMatchObject({ code: 'request.not_found' });
    const found = await fetch(`${baseUrl}/api/v1/courses/${COURSE.courseId}`, { headers });
    expect(found.status).toBe(200);
    expect(found.headers.get('etag')).toBe('"v2"');
    // Exactly the spec's course fields plus the resolved locale maps, nothing internal.
    expect(await found.json()).toEqual(COURSE);
    // Accept-Language and the caller's trace (continued by the gateway's own span) reach the subgraphs.
    expect(calls.at(-1)?.forward['accept-language']).toBe('fr');
    expect(calls.at(-1)?.forward.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  });
});

describe('REST conventions', () => {
  const check = contractChecker(openApiDocument(ROUTES));
  const answered = async (response: Response) => ({
    status: response.status,
    headers: response.headers,
    text: await response.text(),
  });
  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}`, 'x-tenant-id': tenant, ...headers } });
  const coursePath = `/api/v1/courses/${COURSE.courseId}`;
  const courseOp = { method: 'GET', path: '/api/v1/courses/{courseId}' };
  const patchOp = { method: 'PATCH', path: '/api/v1/courses/{courseId}' };

  it('answers a 201 with the Location of a GET route that reads the created rule', async () => {
    const created = ruleCreated();
    const rule = created.data!.createRoutingRule as { ruleId: string };
    scripts.set('RestCreateRoutingRule', async () => created);
    scripts.set('RestRoutingRule', async (variables) => ({
      data: { routingRule: variables.ruleId === rule.ruleId ? created.data!.createRoutingRule : null },
    }));
    const response = await answered(await post('/v1/admin/routing-rules', RULE, { 'idempotency-key': newUlid() }));
    expect(check({ method: 'POST', path: '/v1/admin/routing-rules' }, response)).toEqual([]);
    expect(response.status).toBe(201);
    const location = response.headers.get('location');
    expect(location).toBe(`/v1/admin/routing-rules/${rule.ruleId}`);
    const read = await answered(await get(location!));
    expect(check({ method: 'GET', path: '/v1/admin/routing-rules/{ruleId}' }, read)).toEqual([]);
    expect(read.status).toBe(200);
    expect(JSON.parse(read.text)).toEqual(JSON.parse(response.text));
    const absent = await answered(await get(`/v1/admin/routing-rules/${newId('routingRule')}`));
    expect(absent.status).toBe(404);
    expect(check({ method: 'GET', path: '/v1/admin/routing-rules/{ruleId}' }, absent)).toEqual([]);
  });

  it('answers If-None-Match with 304 and the ETag (weak comparison, * for any), without a body', async () => {
    scripts.set('RestCourse', async () => ({ data: { course: COURSE } }));
    for (const ifNoneMatch of ['"v2"', 'W/"v2"', '"v1", "v2"', '*']) {
      const response = await answered(await get(coursePath, { 'if-none-match': ifNoneMatch }));
      expect(response.status, ifNoneMatch).toBe(304);
      expect(response.text).toBe('');
      expect(response.headers.get('etag')).toBe('"v2"');
      expect(response.headers.get('vary')).toBe('Accept-Language, Accept-Encoding');
      expect(response.headers.get('content-type')).toBeNull();
      expect(check(courseOp, response)).toEqual([]);
    }
    const changed = await answered(await get(coursePath, { 'if-none-match': '"v1"' }));
    expect(changed.status).toBe(200);
    expect(JSON.parse(changed.text)).toEqual(COURSE);
    expect(check(courseOp, changed)).toEqual([]);
  });

  it('merges a merge patch into the course read, and writes it pinned to the ETag read', async () => {
    const writes: Array<{ input: unknown; ifMatch?: string }> = [];
    scripts.set('RestCourse', async () => ({ data: { course: COURSE } }));
    scripts.set('RestUpdateCourseMetadata', async (variables, context) => {
      writes.push({ input: variables.input, ifMatch: context.forward['if-match'] });
      const input = variables.input as { title: Record<string, string> };
      return { data: { updateCourseMetadata: { ...COURSE, title: input.title, etag: '"v3"' } } };
    });
    const patch = (body: unknown, ifMatch: string) =>
      post(
        coursePath,
        body,
        { 'idempotency-key': newUlid(), 'if-match': ifMatch, 'content-type': 'application/merge-patch+json' },
        'PATCH',
      );

    const merged = await answered(await patch({ title: { en: 'Intro II' } }, '"v2"'));
    expect(check(patchOp, merged)).toEqual([]);
    expect(merged.status, merged.text).toBe(200);
    expect(merged.headers.get('etag')).toBe('"v3"');
    expect(JSON.parse(merged.text).title).toEqual({ en: 'Intro II', fr: 'Intro FR' });
    // `*` means "whatever is current": the write is still pinned to what was merged.
    expect((await patch({ title: { fr: null } }, '*')).status).toBe(200);
    expect(writes).toEqual([
      { input: { title: { en: 'Intro II', fr: 'Intro FR' } }, ifMatch: '"v2"' },
      { input: { title: { en: 'Intro' } }, ifMatch: '"v2"' },
    ]);

    const stale = await answered(await patch({ title: { en: 'Late' } }, '"v1"'));
    expect(stale.status).toBe(412);
    expect(JSON.parse(stale.text)).toMatchObject({ code: 'request.precondition_failed', etag: '"v2"' });
    expect(check(patchOp, stale)).toEqual([]);
    const weak = await patch({ title: { en: 'Late' } }, 'W/"v2"');
    expect(weak.status).toBe(412);
    expect(writes).toHaveLength(2);

    // Plain JSON is not merged: the member is sent as given and the subgraph replaces it.
    const replaced = await post(
      coursePath,
      { title: { en: 'Only' } },
      { 'idempotency-key': newUlid(), 'if-match': '"v2"' },
      'PATCH',
    );
    expect(replaced.status).toBe(200);
    expect(writes.at(-1)).toEqual({ input: { title: { en: 'Only' } }, ifMatch: '"v2"' });
  });

  it('validates a merge patch by its own schema: null removes a locale or the cover, never a required member', async () => {
    const patch = (body: unknown) =>
      post(
        coursePath,
        body,
        { 'idempotency-key': newUlid(), 'if-match': '"v2"', 'content-type': 'application/merge-patch+json' },
        'PATCH',
      );
    for (const [body, pointer] of [
      [{ title: null }, '/title'],
      [{ tags: null }, '/tags'],
      [{ defaultLocale: null }, '/defaultLocale'],
      [{ title: { 'not a locale': 'x' } }, '/title/not a locale'],
      [{}, ''],
    ] as const) {
      const response = await answered(await patch(body));
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(JSON.parse(response.text)).toMatchObject({ code: 'request.validation_failed', path: pointer });
      expect(check(patchOp, response)).toEqual([]);
    }
    // In plain JSON the same null is refused too (there, a member is replaced, never removed).
    expect((await post(coursePath, { cover: null }, { 'idempotency-key': newUlid(), 'if-match': '"v2"' }, 'PATCH')).status).toBe(
      400,
    );
    expect(calls).toHaveLength(0);
  });

  it('never replays a key across the two PATCH media types: the same members mean another change', async () => {
    scripts.set('RestCourse', async () => ({ data: { course: COURSE } }));
    scripts.set('RestUpdateCourseMetadata', async () => ({ data: { updateCourseMetadata: COURSE } }));
    const key = newUlid();
    const body = { title: { en: 'Intro' } };
    expect((await post(coursePath, body, { 'idempotency-key': key, 'if-match': '"v2"' }, 'PATCH')).status).toBe(200);
    const merged = await post(
      coursePath,
      body,
      { 'idempotency-key': key, 'if-match': '"v2"', 'content-type': 'application/merge-patch+json' },
      'PATCH',
    );
    expect(merged.status).toBe(422);
    expect(await merged.json()).toMatchObject({ code: 'idempotency.key_reused' });
    expect(calls.map((c) => c.operation)).toEqual(['RestUpdateCourseMetadata']);
  });

  it('takes only the two documented PATCH media types (415 with Accept-Patch)', async () => {
    const response = await answered(
      await post(
        coursePath,
        [{ op: 'replace', path: '/tags', value: [] }],
        {
          'idempotency-key': newUlid(),
          'if-match': '"v2"',
          'content-type': 'application/json-patch+json',
        },
        'PATCH',
      ),
    );
    expect(response.status).toBe(415);
    expect(response.headers.get('accept-patch')).toBe('application/json, application/merge-patch+json');
    expect(check(patchOp, response)).toEqual([]);
    expect(calls).toHaveLength(0);
  });

  it("checks the route's scopes before If-Match and before a merge patch reads anything", async () => {
    const headers = { authorization: `Bearer ${readerToken}`, 'idempotency-key': newUlid() };
    const variants: Array<Record<string, string>> = [{}, { 'if-match': '"v2"', 'content-type': 'application/merge-patch+json' }];
    for (const extra of variants) {
      const response = await answered(await post(coursePath, { tags: ['x'] }, { ...headers, ...extra }, 'PATCH'));
      expect(response.status).toBe(403);
      expect(JSON.parse(response.text)).toMatchObject({ code: 'authz.scope_missing', acceptedScopes: ['catalog.admin'] });
      expect(check(patchOp, response)).toEqual([]);
    }
    expect(calls).toHaveLength(0);
  });

  it('serves the OpenAPI document at /openapi.json without a token', async () => {
    const response = await fetch(`${baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual(JSON.parse(JSON.stringify(openApiDocument(ROUTES))));
    const post = await fetch(`${baseUrl}/openapi.json`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
  });
});
