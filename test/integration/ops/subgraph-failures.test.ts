import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../../gateway/gateway.js';
import type { RunningServer } from '../../../platform/graphql/subgraph-server.js';
import { newId } from '../../../platform/ids.js';
import { freePort } from '../../support/child-env.js';
import { startCatalogFixture, startFixtureGateway, type CatalogFixture } from '../../support/catalog-fixture.js';
import { BALANCER_PAGES, startFakeReplica, type FakeReplica, type ReplicaMode } from '../../support/fake-subgraph.js';

/**
 * What the gateway answers when the address of a subgraph answers something other than the
 * subgraph: a balancer's 5xx page, a 200 that is not GraphQL, nothing within the fetch timeout, or
 * no connection. The AI subgraph's address is a fake under the test's control; the catalog is real,
 * so an operation that asks both has partial data. Issue #22, item 1.
 */
const TENANT = newId('tenant');
// Long enough for the real catalog's fetches on a loaded machine (they share the setting); the
// frozen replica never answers, so the cases that meet it take this long, no more.
const TIMEOUT_MS = 2_000;

let fixture: CatalogFixture;
let catalog: RunningServer;
let ai: FakeReplica;
let closedAiUrl: string;
let token: string;
let logLines: string[] = [];

beforeAll(async () => {
  fixture = await startCatalogFixture({
    tenant: TENANT,
    scope: 'catalog.read ai.assist',
    dataDir: '.data/subgraph-failures-test',
  });
  ({ catalog, token } = fixture);
  ai = await startFakeReplica();
  closedAiUrl = `http://127.0.0.1:${await freePort()}/graphql`;
});

afterAll(async () => {
  await ai?.close();
  await fixture?.close();
});

beforeEach(() => {
  logLines.splice(0);
});

const auth = () => ({ authorization: `Bearer ${token}`, 'x-tenant-id': TENANT });

async function graphql(base: string, query: string) {
  const response = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const text = await response.text();
  return { status: response.status, retryAfter: response.headers.get('retry-after'), text, json: JSON.parse(text) };
}

async function rest(base: string, path: string) {
  const response = await fetch(`${base}${path}`, { headers: auth() });
  const text = await response.text();
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    contentType: response.headers.get('content-type'),
    text,
    json: JSON.parse(text),
  };
}

/** Nothing of the subgraph's address or of what stood in for it reaches the client. */
function expectNothingInternal(text: string, aiUrl: string) {
  const { port } = new URL(aiUrl);
  expect(text).not.toContain(port);
  expect(text).not.toContain('127.0.0.1');
  expect(text.toLowerCase()).not.toContain('<html');
  expect(text).not.toMatch(/nginx|haproxy|maintenance|10\.0\.3\.7/);
  expect(text).not.toContain('BAD_USER_INPUT');
}

const PROVENANCE_ONLY = `{ provenance(provenanceId: "${newId('provenance')}") { provenanceId } }`;
const MIXED = `{ courses(first: 1) { edges { node { courseId } } } provenance(provenanceId: "${newId('provenance')}") { provenanceId } }`;

const CASES: Array<[string, ReplicaMode | 'closed']> = [
  ["a balancer's 502 page", 'html-502'],
  ["a balancer's 503 page", 'html-503'],
  ['a 200 with an HTML body', 'html-200'],
  ['a 200 with JSON that is not a GraphQL response', 'json-200'],
  [`no answer within SUBGRAPH_TIMEOUT_MS (${TIMEOUT_MS} ms)`, 'hang'],
  ['a refused connection', 'closed'],
];

describe.each(CASES)('the AI subgraph address answering %s', (_what, mode) => {
  // A gateway per case: its view of the AI replica starts fresh (in rotation), as after a start.
  let gateway: RunningGateway;
  beforeAll(async () => {
    if (mode !== 'closed') ai.mode = mode;
    const aiUrl = mode === 'closed' ? closedAiUrl : ai.url;
    const started = await startFixtureGateway(fixture, {
      subgraphUrls: { catalog: catalog.url, ai: aiUrl },
      settings: { subgraphTimeoutMs: TIMEOUT_MS },
    });
    ({ gateway, logLines } = started);
  });
  afterAll(async () => gateway?.close());
  const target = () => ({ base: gateway.url, aiUrl: mode === 'closed' ? closedAiUrl : ai.url });

  it('logs what the client is not told when the replica fails: its address and what answered there', async () => {
    const { base, aiUrl } = target();
    await graphql(base, PROVENANCE_ONLY);
    const logged = logLines.join('\n');
    expect(logged).toContain(aiUrl);
    if (mode === 'html-502' || mode === 'html-503')
      expect(logged).toContain(BALANCER_PAGES[mode === 'html-502' ? 502 : 503].slice(0, 40));
  });

  it('GraphQL: 503 subgraph.unavailable with Retry-After when nothing could answer, and no internal detail', async () => {
    const { base, aiUrl } = target();
    const answer = await graphql(base, PROVENANCE_ONLY);
    expect(answer.status, answer.text).toBe(503);
    expect(answer.retryAfter).toBe('1');
    expect(answer.json.data).toEqual({ provenance: null });
    expect(answer.json.errors).toHaveLength(1);
    expect(answer.json.errors[0]).toMatchObject({
      path: ['provenance'],
      extensions: { code: 'subgraph.unavailable', serviceName: 'ai', status: 503, retryAfterSeconds: 1 },
    });
    expect(Object.keys(answer.json.errors[0].extensions).sort()).toEqual(['code', 'retryAfterSeconds', 'serviceName', 'status']);
    expectNothingInternal(answer.text, aiUrl);
  });

  it('GraphQL: partial data keeps 200, with the error on the path of the field that could not answer', async () => {
    const { base, aiUrl } = target();
    const answer = await graphql(base, MIXED);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json.data).toEqual({ courses: { edges: [] }, provenance: null });
    expect(answer.json.errors).toHaveLength(1);
    expect(answer.json.errors[0]).toMatchObject({ path: ['provenance'], extensions: { code: 'subgraph.unavailable' } });
    expectNothingInternal(answer.text, aiUrl);
  });

  it('REST: 503 problem subgraph.unavailable with Retry-After, and no internal detail', async () => {
    const { base, aiUrl } = target();
    const answer = await rest(base, `/v1/ai/provenance/${newId('provenance')}`);
    expect(answer.status, answer.text).toBe(503);
    expect(answer.retryAfter).toBe('1');
    expect(answer.contentType).toContain('application/problem+json');
    expect(answer.json).toMatchObject({ code: 'subgraph.unavailable', status: 503 });
    expectNothingInternal(answer.text, aiUrl);
  });
});
