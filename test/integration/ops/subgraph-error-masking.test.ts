import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../../gateway/gateway.js';
import { newId } from '../../../platform/ids.js';
import { startTelemetry } from '../../../platform/observability/telemetry.js';
import { startCatalogFixture, startFixtureGateway, type CatalogFixture } from '../../support/catalog-fixture.js';
import { startFakeReplica, type FakeReplica } from '../../support/fake-subgraph.js';

/**
 * What a client sees of a subgraph's error through the gateway, with production settings: an
 * error without one of our stable codes is INTERNAL_SERVER_ERROR with a fixed message (as on the
 * REST door), and no error carries more than the registry's members — never `exception`, a stack,
 * a URL or an internal message. The internal detail is in the gateway's log, with the request's
 * id. The AI subgraph is a fake answering what a subgraph of another make (or a broken one) would.
 * Issue #33, item 5.
 */
const TENANT = newId('tenant');
const SECRET = 'sk-live-9f8e7d6c5b4a39281706';
const INTERNAL_URL = 'postgres://catalog:hunter2@10.0.3.7:5432/ai';
const INTERNAL_MESSAGE = `connect ECONNREFUSED ${INTERNAL_URL} (api key ${SECRET})`;
const STACK = [`Error: ${INTERNAL_MESSAGE}`, '    at PrismaClient.connect (/app/node_modules/@prisma/client/runtime.js:1:2)'];

let fixture: CatalogFixture;
let ai: FakeReplica;
let gateway: RunningGateway;
let logLines: string[];
let nodeEnv: string | undefined;

beforeAll(async () => {
  // Apollo decides whether to answer stack traces from NODE_ENV when a server is built.
  nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  // As every entry point does: log lines written while serving a request carry its id.
  startTelemetry({ serviceName: 'subgraph-error-masking-test' });
  fixture = await startCatalogFixture({
    tenant: TENANT,
    scope: 'catalog.read ai.assist',
    dataDir: '.data/subgraph-error-masking-test',
  });
  ai = await startFakeReplica();
  ai.mode = 'graphql';
  ({ gateway, logLines } = await startFixtureGateway(fixture, { subgraphUrls: { catalog: fixture.catalog.url, ai: ai.url } }));
});

afterAll(async () => {
  await gateway?.close();
  await ai?.close();
  await fixture?.close();
  process.env.NODE_ENV = nodeEnv;
});

const PROVENANCE = `{ provenance(provenanceId: "${newId('provenance')}") { provenanceId } }`;

async function graphql(query: string, requestId: string) {
  const response = await fetch(`${gateway.url}/graphql`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${fixture.token}`,
      'x-tenant-id': TENANT,
      'x-request-id': requestId,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ query }),
  });
  const text = await response.text();
  return { status: response.status, text, json: JSON.parse(text) as { errors?: Array<Record<string, unknown>> } };
}

function expectNothingInternal(text: string) {
  expect(text).not.toContain(SECRET);
  expect(text).not.toContain('hunter2');
  expect(text).not.toContain('10.0.3.7');
  expect(text).not.toContain('ECONNREFUSED');
  expect(text).not.toMatch(/stacktrace|exception|node_modules/i);
  expect(text).not.toMatch(/https?:\/\/|postgres:\/\//);
}

describe('a subgraph error without one of our stable codes, through the gateway', () => {
  const internalAnswers: Array<[string, Record<string, unknown>]> = [
    [
      'INTERNAL_SERVER_ERROR with its message and exception.stacktrace (Apollo Server 2/3 in development)',
      { code: 'INTERNAL_SERVER_ERROR', exception: { stacktrace: STACK }, serviceUrl: 'http://10.0.3.7:4002/graphql' },
    ],
    ['no code at all (Apollo Gateway makes it DOWNSTREAM_SERVICE_ERROR)', {}],
    ['a code of its own that is not ours', { code: 'PRISMA_P1001', stacktrace: STACK }],
  ];

  it.each(internalAnswers)('%s: INTERNAL_SERVER_ERROR, a fixed message, nothing internal', async (_what, extensions) => {
    ai.graphqlAnswer = { data: { provenance: null }, errors: [{ message: INTERNAL_MESSAGE, path: ['provenance'], extensions }] };
    const answer = await graphql(PROVENANCE, newId('request'));
    expect(answer.json.errors, answer.text).toEqual([
      {
        message: 'Internal server error',
        path: ['provenance'],
        extensions: { code: 'INTERNAL_SERVER_ERROR', serviceName: 'ai' },
      },
    ]);
    expectNothingInternal(answer.text);
  });

  it('is logged by the gateway with what the subgraph said and the request id', async () => {
    ai.graphqlAnswer = {
      data: { provenance: null },
      errors: [
        {
          message: INTERNAL_MESSAGE,
          path: ['provenance'],
          extensions: { code: 'INTERNAL_SERVER_ERROR', exception: { stacktrace: STACK } },
        },
      ],
    };
    const requestId = newId('request');
    await graphql(PROVENANCE, requestId);
    const logged = logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.requestId === requestId);
    const masked = logged.find((line) => line.msg === 'subgraph error masked');
    expect(masked, JSON.stringify(logged)).toBeDefined();
    const text = JSON.stringify(masked);
    expect(text).toContain(INTERNAL_URL);
    expect(text).toContain('PrismaClient.connect');
    // The log keeps the detail, not the credential (platform/observability/logger.ts scrubs it).
    expect(text).not.toContain(SECRET);
  });
});

describe('a subgraph error with one of our stable codes, through the gateway', () => {
  it('keeps its code, message and the registry members; drops every other member', async () => {
    ai.graphqlAnswer = {
      data: { provenance: null },
      errors: [
        {
          message: 'The token has none of the scopes this operation accepts',
          path: ['provenance'],
          extensions: {
            code: 'authz.scope_missing',
            status: 403,
            acceptedScopes: ['ai.admin'],
            exception: { stacktrace: STACK },
            stacktrace: STACK,
            debugUrl: 'http://10.0.3.7:4002/debug',
          },
        },
      ],
    };
    const answer = await graphql(PROVENANCE, newId('request'));
    expect(answer.json.errors, answer.text).toEqual([
      {
        message: 'The token has none of the scopes this operation accepts',
        path: ['provenance'],
        extensions: { code: 'authz.scope_missing', status: 403, acceptedScopes: ['ai.admin'], serviceName: 'ai' },
      },
    ]);
    expectNothingInternal(answer.text);
  });

  it('keeps a validation error with its field', async () => {
    ai.graphqlAnswer = {
      data: { provenance: null },
      errors: [
        {
          message: 'provenanceId is not a provenance id',
          path: ['provenance'],
          extensions: { code: 'BAD_USER_INPUT', argument: 'provenanceId', exception: { stacktrace: STACK } },
        },
      ],
    };
    const answer = await graphql(PROVENANCE, newId('request'));
    expect(answer.json.errors, answer.text).toEqual([
      {
        message: 'provenanceId is not a provenance id',
        path: ['provenance'],
        extensions: { code: 'BAD_USER_INPUT', argument: 'provenanceId', serviceName: 'ai' },
      },
    ]);
    expectNothingInternal(answer.text);
  });
});
