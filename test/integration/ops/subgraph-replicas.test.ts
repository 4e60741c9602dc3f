import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../../gateway/gateway.js';
import { subgraphChecks } from '../../../gateway/subgraph-calls/readiness.js';
import type { SubgraphUrls } from '../../../gateway/subgraph-calls/replicas.js';
import { newId, newUlid } from '../../../platform/ids.js';
import { createMetrics, type Metrics } from '../../../platform/observability/metrics.js';
import { startCatalogFixture, startFixtureGateway, type CatalogFixture } from '../../support/catalog-fixture.js';
import { freePort } from '../../support/child-env.js';
import { eventually } from '../../support/eventually.js';
import { startFakeReplica, type FakeReplica } from '../../support/fake-subgraph.js';

/**
 * Two replicas of the catalog subgraph given to the gateway as a URL list (CATALOG_URL), without a
 * balancer: each replica is a relay to one real catalog that counts what reaches it, and can be
 * switched to a balancer's 502 page or to silence. Reads keep succeeding on the healthy replica;
 * a mutation is never sent twice unless the first attempt provably never left (a refused
 * connection). Issue #22, item 1 (second half).
 */
const TENANT = newId('tenant');

let fixture: CatalogFixture;
let replicas: { a: FakeReplica; b: FakeReplica };
let closedUrl: string;
let gateway: RunningGateway | undefined;
let metrics: Metrics;

beforeAll(async () => {
  fixture = await startCatalogFixture({
    tenant: TENANT,
    scope: 'catalog.read catalog.admin',
    dataDir: '.data/subgraph-replicas-test',
  });
  replicas = { a: await startFakeReplica(fixture.catalog.url), b: await startFakeReplica(fixture.catalog.url) };
  closedUrl = `http://127.0.0.1:${await freePort()}/graphql`;
});

afterAll(async () => {
  await replicas?.a.close();
  await replicas?.b.close();
  await fixture?.close();
});

afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

/** A gateway whose view of the replicas starts fresh: the first fetch goes to the first replica. */
async function startWith(
  catalog: SubgraphUrls,
  settings: { subgraphMutationTimeoutMs?: number; subgraphReadinessIntervalMs?: number } = {},
) {
  for (const replica of Object.values(replicas)) {
    replica.mode = 'forward';
    replica.seen = { queries: 0, mutations: 0, health: 0 };
  }
  metrics = createMetrics({ defaultMetrics: false });
  ({ gateway } = await startFixtureGateway(fixture, {
    subgraphUrls: { catalog, ai: closedUrl },
    // Passive health only, unless a test watches readiness: the counts below are per fetch.
    settings: { subgraphTimeoutMs: 1_500, subgraphReplicaBackoffMs: 100, subgraphReadinessIntervalMs: 0, ...settings },
    metrics,
  }));
}

const headers = (extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${fixture.token}`,
  'x-tenant-id': TENANT,
  'content-type': 'application/json',
  ...extra,
});

async function graphql(query: string, extra: Record<string, string> = {}) {
  const response = await fetch(`${gateway!.url}/graphql`, {
    method: 'POST',
    headers: headers(extra),
    body: JSON.stringify({ query }),
  });
  const text = await response.text();
  return { status: response.status, text, json: JSON.parse(text) };
}

const READ = '{ courses(first: 1) { edges { node { courseId } } } }';
/** A catalog mutation: it fails in its resolver (no such course), after reaching a replica. */
const archive = () =>
  graphql(`mutation { archiveCourse(courseId: "${newId('course')}", reason: "replica test") { courseId } }`, {
    'idempotency-key': newUlid(),
  });

describe('reads across two replicas of a subgraph', () => {
  it('stop going to a replica whose /readyz turns 503 (it drains for a shutdown) while it still answers', async () => {
    await startWith([replicas.a.url, replicas.b.url], { subgraphReadinessIntervalMs: 100 });
    for (let i = 0; i < 4; i++) expect((await graphql(READ)).status).toBe(200);
    expect(replicas.a.seen.queries).toBeGreaterThan(0);
    replicas.a.mode = 'draining';
    await eventually(() => replicas.a.seen.health > 0, 'the readiness watch to ask the draining replica');
    await eventually(async () => {
      const before = replicas.a.seen.queries;
      for (let i = 0; i < 6; i++) expect((await graphql(READ)).status).toBe(200);
      expect(replicas.a.seen.queries).toBe(before);
    }, 'reads to stay on the ready replica');
    expect(metrics ? (await metrics.render()).body : '').toMatch(/^subgraph_replicas_up\{subgraph="catalog"\} 1$/m);
  });

  it("keep succeeding when one answers a balancer's 502: retried on the other, the failed one out of rotation", async () => {
    await startWith([replicas.a.url, replicas.b.url]);
    replicas.a.mode = 'html-502';
    for (let i = 0; i < 6; i++) {
      const answer = await graphql(READ);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.json).toEqual({ data: { courses: { edges: [] } } });
    }
    // Tried once (the first fetch of a fresh gateway goes to the first replica), then left out.
    expect(replicas.a.seen.queries).toBe(1);
    expect(replicas.b.seen.queries).toBe(6);
    const text = (await metrics.render()).body;
    expect(text).toMatch(/^subgraph_fetch_retries_total\{subgraph="catalog"\} 1$/m);
    expect(text).toMatch(/^subgraph_replicas_up\{subgraph="catalog"\} 1$/m);
  });

  it('keep succeeding when one never answers: retried on the other after SUBGRAPH_TIMEOUT_MS', async () => {
    await startWith([replicas.a.url, replicas.b.url]);
    replicas.a.mode = 'hang';
    for (let i = 0; i < 3; i++) expect((await graphql(READ)).status).toBe(200);
    expect(replicas.a.seen.queries).toBe(1);
    expect(replicas.b.seen.queries).toBe(3);
  });

  it('bring a failed replica back once its health probe answers', async () => {
    await startWith([replicas.a.url, replicas.b.url]);
    replicas.a.mode = 'html-502';
    expect((await graphql(READ)).status).toBe(200);
    expect(replicas.a.seen.queries).toBe(1);
    replicas.a.mode = 'forward';
    await eventually(async () => {
      expect((await graphql(READ)).status).toBe(200);
      expect(replicas.a.seen.queries).toBeGreaterThan(1);
    }, 'reads to reach the replica again after its probe');
    expect(replicas.a.seen.health).toBeGreaterThan(0);
  });

  it('use the REST door the same way (a page of courses)', async () => {
    await startWith([replicas.a.url, replicas.b.url]);
    replicas.a.mode = 'html-503';
    const response = await fetch(`${gateway!.url}/api/v1/courses`, { headers: headers() });
    expect(response.status, await response.clone().text()).toBe(200);
    expect(await response.json()).toMatchObject({ items: [] });
    expect(replicas.b.seen.queries).toBe(1);
  });
});

describe('mutations across two replicas of a subgraph', () => {
  it("are not sent again when a replica answered a balancer's 502: one request in all, 503 subgraph.unavailable", async () => {
    await startWith([replicas.a.url, replicas.b.url]);
    replicas.a.mode = 'html-502';
    const refused = await archive();
    expect(refused.status, refused.text).toBe(503);
    expect(refused.json.errors[0].extensions).toMatchObject({ code: 'subgraph.unavailable', serviceName: 'catalog' });
    expect([replicas.a.seen.mutations, replicas.b.seen.mutations]).toEqual([1, 0]);
    // The next one goes to the replica in rotation, once.
    const served = await archive();
    expect(served.json.errors[0].extensions.code, served.text).toBe('request.not_found');
    expect([replicas.a.seen.mutations, replicas.b.seen.mutations]).toEqual([1, 1]);
  });

  it('are not sent again when a replica did not answer in time (it may have done the work)', async () => {
    await startWith([replicas.a.url, replicas.b.url], { subgraphMutationTimeoutMs: 800 });
    replicas.a.mode = 'hang';
    const refused = await archive();
    expect(refused.status, refused.text).toBe(503);
    expect([replicas.a.seen.mutations, replicas.b.seen.mutations]).toEqual([1, 0]);
  });

  it('go to the other replica when the connection to one was refused (nothing was sent)', async () => {
    await startWith([closedUrl, replicas.b.url]);
    const served = await archive();
    expect(served.json.errors[0].extensions.code, served.text).toBe('request.not_found');
    expect(replicas.b.seen.mutations).toBe(1);
  });
});

describe('readiness over the replicas of a subgraph', () => {
  it('is up with every replica answering, degraded with some, down with none — naming replicas by position only', async () => {
    const { a, b } = replicas;
    a.mode = 'forward';
    b.mode = 'forward';
    expect(await subgraphChecks({ catalog: [a.url, b.url] })).toEqual({ 'subgraph:catalog': { status: 'up', required: false } });
    b.mode = 'html-503';
    expect(await subgraphChecks({ catalog: [a.url, b.url, closedUrl] })).toEqual({
      'subgraph:catalog': {
        status: 'degraded',
        required: false,
        detail: '1 of 3 replicas answer (replica 2: health check answered 503; replica 3: unreachable)',
      },
    });
    a.mode = 'html-502';
    const down = (await subgraphChecks({ catalog: [a.url, b.url] }))['subgraph:catalog'];
    expect(down).toMatchObject({ status: 'down', required: false });
    expect(down.detail).toContain('no replica answers');
    expect(down.detail).not.toContain('127.0.0.1');
  });
});

describe("the AI health relay (GET /v1/ai/health) over the AI subgraph's replicas", () => {
  it('answers from a replica that serves when the first cannot be reached', async () => {
    for (const replica of Object.values(replicas)) replica.mode = 'forward';
    metrics = createMetrics({ defaultMetrics: false });
    // A relay without upstream answers every path (the health endpoint included) with 200 JSON.
    const ai = await startFakeReplica();
    try {
      ({ gateway } = await startFixtureGateway(fixture, {
        subgraphUrls: { catalog: fixture.catalog.url, ai: [closedUrl, ai.url] },
      }));
      const response = await fetch(`${gateway!.url}/v1/ai/health`, { headers: headers() });
      expect(response.status).toBe(200);
      expect(ai.seen.queries).toBe(1);
    } finally {
      await ai.close();
    }
  });
});
