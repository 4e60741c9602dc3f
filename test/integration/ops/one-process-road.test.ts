import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../../platform/auth/dev-keys.js';
import { newId, newUlid } from '../../../platform/ids.js';
import type { System } from '../../../processes/system.js';
import { eventually } from '../../support/eventually.js';
import { startTestSystem, type TestSystem } from '../../support/in-process-system.js';

/**
 * `npm start` takes the production road: the gateway of the one-process system reaches both
 * subgraphs over loopback HTTP, through their doors (request id, access log, authentication,
 * limits), as a gateway process reaches them at CATALOG_URL and AI_URL. Each door's access-log
 * stage counts what came in through it (http_requests_total{service}); an operation run on a
 * subgraph's Apollo Server in process would not be counted there.
 */
const TENANT = newId('tenant');

let running: TestSystem;
let system: System;
let token: string;

async function metrics(): Promise<string> {
  return (await fetch(`${system.gatewayUrl}/metrics`)).text();
}

/** Requests the `service` door answered on POST /graphql with 200. */
async function doorRequests(service: 'catalog' | 'ai'): Promise<number> {
  const line = new RegExp(
    `^http_requests_total\\{service="${service}",method="POST",route="/graphql",status="200"\\} (\\d+)$`,
    'm',
  );
  return Number(line.exec(await metrics())?.[1] ?? 0);
}

/** Operations named `operation` that `service`'s Apollo Server ran to an answer without errors. */
async function operations(service: string, operation: string, type: string): Promise<number> {
  const line = new RegExp(
    `^graphql_operation_duration_seconds_count\\{service="${service}",operation="${operation}",type="${type}",outcome="ok"\\} (\\d+)$`,
    'm',
  );
  return Number(line.exec(await metrics())?.[1] ?? 0);
}

const headers = () => ({ authorization: `Bearer ${token}`, 'x-tenant-id': TENANT, 'content-type': 'application/json' });

beforeAll(async () => {
  running = await startTestSystem('one-process-road');
  system = running.system;
  token = await mintToken(running.keys.privateJwk, { sub: 'svc:road-test', tid: TENANT, scope: 'catalog.read ai.assist' });
}, 120_000);

afterAll(() => running?.stop());

describe('one process, the production road', () => {
  it('a GraphQL query through the gateway enters the catalog subgraph through its HTTP door', async () => {
    const before = await doorRequests('catalog');
    const response = await fetch(`${system.gatewayUrl}/graphql`, {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({ query: '{ courses(first: 5) { edges { node { courseId } } } }' }),
    });
    expect(response.status, await response.clone().text()).toBe(200);
    expect(await response.json()).toEqual({ data: { courses: { edges: [] } } });
    // The door counts a request when its response closes, which may trail the bytes the gateway read.
    await eventually(async () => expect(await doorRequests('catalog')).toBe(before + 1), 'the catalog door to count it');
  });

  it("REST assist runs through the gateway's execute port, then the AI subgraph's HTTP door", async () => {
    const [gateway, ai, door] = [
      await operations('gateway', 'RestAssist', 'mutation'),
      await operations('ai', 'RestAssist', 'mutation'),
      await doorRequests('ai'),
    ];
    const response = await fetch(`${system.gatewayUrl}/v1/ai/assist`, {
      method: 'POST',
      headers: { ...headers(), 'idempotency-key': newUlid() },
      body: JSON.stringify({
        featureKey: 'portal.triage',
        variables: { locale: 'en', message: 'Mild headache since this morning' },
        context: { facilityId: 'fac-1', specialty: 'general' },
      }),
    });
    expect(response.status, await response.clone().text()).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'completed', provenanceId: expect.stringMatching(/^prv_/) });
    expect(await operations('gateway', 'RestAssist', 'mutation')).toBe(gateway + 1);
    // The planner's fetch (`RestAssist__ai__0`) is labelled by the document it was planned for.
    expect(await operations('ai', 'RestAssist', 'mutation')).toBe(ai + 1);
    await eventually(async () => expect(await doorRequests('ai')).toBe(door + 1), 'the AI door to count it');
  });
});
