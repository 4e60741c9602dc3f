import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../platform/ids.js';
import { startSystemWithDatabase, type SystemProcess } from '../support/system-process.js';
import type { TestDatabase } from '../support/database.js';

/**
 * SIGTERM under load, on the real process: requests in flight finish with complete responses, new
 * ones are refused (never half-answered), nothing the process accepted is lost, and it exits 0
 * (exitOnSignals exits 1 when SHUTDOWN_TIMEOUT_MS is exceeded, so 0 also means within the bound).
 */
const tenant = newId('tenant');
const SLOW_REQUESTS = 8;

type Outcome =
  | { kind: 'response'; status: number; body: string; complete: boolean }
  | { kind: 'refused'; code: string }
  | { kind: 'cut'; code: string };

let system: SystemProcess;
let db: TestDatabase;
let close: () => Promise<void>;
let token: string;

beforeAll(async () => {
  ({ system, db, close } = await startSystemWithDatabase({ MOCK_FAULT_INJECTION: 'true', SHUTDOWN_TIMEOUT_MS: '20000' }));
  token = await system.mintToken(tenant, 'catalog.read ai.assist');
});

afterAll(async () => close?.());

function errorCode(error: unknown): string {
  const cause = (error as { cause?: { code?: string } }).cause;
  return cause?.code ?? (error as Error).name;
}

/** A request whose outcome says how far it got: no response at all, a cut response, or a whole one. */
async function request(path: string, init: RequestInit): Promise<Outcome> {
  let response: Response;
  try {
    response = await fetch(`${system.baseUrl}${path}`, init);
  } catch (error) {
    return { kind: 'refused', code: errorCode(error) };
  }
  try {
    const body = await response.text();
    const length = response.headers.get('content-length');
    let complete = length === null || Buffer.byteLength(body) === Number(length);
    try {
      JSON.parse(body);
    } catch {
      complete = false;
    }
    return { kind: 'response', status: response.status, body, complete };
  } catch (error) {
    return { kind: 'cut', code: errorCode(error) };
  }
}

const headers = () => ({ authorization: `Bearer ${token}`, 'x-tenant-id': tenant, 'content-type': 'application/json' });

function slowAssist(): Promise<Outcome> {
  return request('/v1/ai/assist', {
    method: 'POST',
    headers: { ...headers(), 'idempotency-key': newUlid() },
    body: JSON.stringify({
      featureKey: 'portal.triage',
      variables: { message: 'persistent cough for two weeks', __mock: { latencyMs: 2_500 } },
      context: { facilityId: 'fac-1', specialty: 'gp' },
    }),
  });
}

function read(): Promise<Outcome> {
  return request('/graphql', {
    method: 'POST',
    headers: headers(),
    body: JSON.stringify({ query: '{ courses(first: 3) { edges { node { courseId } } } }' }),
  });
}

/** Assists in flight: only they reach the AI subgraph, so the gateway's fetches to it count them alone. */
async function assistsInFlight(): Promise<number> {
  const text = await fetch(`${system.baseUrl}/metrics`).then((r) => r.text());
  return Number(/^subgraph_fetches_in_flight\{subgraph="ai"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

describe('graceful shutdown', () => {
  it('finishes in-flight requests, refuses new ones, loses nothing and exits 0', async () => {
    // Background reads until the process is gone: some before, some during, some after the signal.
    let exited = false;
    const reads: Array<Promise<Outcome>> = [];
    const readLoop = (async () => {
      while (!exited) {
        reads.push(read());
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    const slow = Array.from({ length: SLOW_REQUESTS }, () => slowAssist());
    const deadline = Date.now() + 15_000;
    while ((await assistsInFlight()) < SLOW_REQUESTS && Date.now() < deadline);
    expect(await assistsInFlight(), system.output()).toBe(SLOW_REQUESTS);

    const exitCode = system.kill('SIGTERM');
    const slowOutcomes = await Promise.all(slow);
    const code = await exitCode;
    exited = true;
    await readLoop;
    const readOutcomes = await Promise.all(reads);

    expect(code, system.output()).toBe(0);

    // Every slow request was in flight at the signal: each one got its whole answer.
    for (const outcome of slowOutcomes) {
      expect(outcome).toMatchObject({ kind: 'response', status: 200, complete: true });
      const body = JSON.parse((outcome as { body: string }).body) as { provenanceId?: string; text?: string };
      expect(body.provenanceId).toMatch(/^prv_/);
      expect(body.text).toBeTruthy();
    }

    // No request was cut mid-response; the ones that got through are whole, the others were refused.
    expect(readOutcomes.filter((o) => o.kind === 'cut')).toEqual([]);
    const answered = readOutcomes.filter((o): o is Extract<Outcome, { kind: 'response' }> => o.kind === 'response');
    for (const outcome of answered) {
      expect(outcome.complete).toBe(true);
      expect([200, 503]).toContain(outcome.status);
    }
    expect(answered.filter((o) => o.status === 200).length).toBeGreaterThan(0);
    expect(readOutcomes.some((o) => o.kind === 'refused')).toBe(true);

    // Nothing accepted was lost: one provenance row per answered assist, no row without an answer.
    const rows = await db.prisma.aIProvenance.findMany({ where: { tenantId: tenant }, select: { id: true, status: true } });
    const answeredIds = slowOutcomes.map(
      (o) => (JSON.parse((o as { body: string }).body) as { provenanceId: string }).provenanceId,
    );
    expect(rows.map((r) => r.id).sort()).toEqual([...answeredIds].sort());
    expect(rows.every((r) => r.status === 'completed')).toBe(true);
  });
});
