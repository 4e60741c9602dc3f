import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../platform/ids.js';
import { privateServicesAvailable, startPrivatePostgres, type PrivatePostgres } from '../support/private-services.js';
import { exchange, startReliabilitySystem, type HttpAnswer, type ReliabilitySystem } from '../support/reliability-system.js';

/**
 * The database drops the parts' sessions under them (pg_terminate_backend, as a failover or an
 * operator does) while keyed writes and reads arrive at every door: the gateway's GraphQL, the REST
 * routes and the subgraphs' own GraphQL. Each answer is the request's own (2xx, 4xx) or 503
 * `dependency.unavailable` with Retry-After; never a 500 (issue #34: two keyed writes answered
 * HTTP 500 INTERNAL_SERVER_ERROR without Retry-After).
 */
const SCOPES = 'catalog.read catalog.admin ai.assist ai.admin';
const ROUNDS = 12;
const tenant = newId('tenant');

describe.runIf(privateServicesAvailable('database sessions dropped', ['postgres']))('database sessions dropped', () => {
  let postgres: PrivatePostgres;
  let system: ReliabilitySystem;
  let admin: pg.Client;
  let bearer: string;

  beforeAll(async () => {
    postgres = await startPrivatePostgres('dropped_sessions');
    system = await startReliabilitySystem({ DATABASE_URL: postgres.url, DB_POOL_SIZE: '4' });
    bearer = await system.system.mintToken(tenant, SCOPES);
    admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
  });

  afterAll(async () => {
    await admin?.end();
    await system?.close();
    await postgres?.destroy();
  });

  /** Ends every session of the database but this test's own. */
  async function terminateSessions(): Promise<number> {
    const { rows } = await admin.query<{ ended: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
       WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
    );
    return rows.filter((row) => row.ended).length;
  }

  function requests(round: number): Array<Promise<HttpAnswer>> {
    const auth = { authorization: `Bearer ${bearer}`, 'x-tenant-id': tenant, 'content-type': 'application/json' };
    const rule = (residency: string) =>
      JSON.stringify({ featureKey: 'portal.triage', residency, primary: { provider: 'mock', model: 'm' }, fallbacks: [] });
    const flag = (key: string) => ({
      query:
        'mutation M($f: String!) { setFeatureFlag(input: { featureKey: $f, flag: "hitl.enabled", enabled: true, reason: "x" }) { featureKey } }',
      variables: { f: key },
    });
    const read = JSON.stringify({ query: '{ courses(first: 1) { edges { node { courseId } } } }' });
    const keyed = () => ({ ...auth, 'idempotency-key': newUlid() });
    return [
      exchange(`${system.system.baseUrl}/v1/admin/routing-rules`, { method: 'POST', headers: keyed(), body: rule(`R${round}`) }),
      exchange(`${system.system.baseUrl}/graphql`, {
        method: 'POST',
        headers: keyed(),
        body: JSON.stringify(flag(`portal.gateway${round}`)),
      }),
      exchange(system.aiUrl, { method: 'POST', headers: keyed(), body: JSON.stringify(flag(`portal.subgraph${round}`)) }),
      exchange(`${system.system.baseUrl}/graphql`, { method: 'POST', headers: auth, body: read }),
      exchange(system.catalogUrl, { method: 'POST', headers: auth, body: read }),
      exchange(`${system.system.baseUrl}/api/v1/courses`, { headers: auth }),
    ];
  }

  it('answers every door with its own answer or 503 dependency.unavailable with Retry-After, never a 500', async () => {
    const answers: HttpAnswer[] = [];
    let terminated = 0;
    for (let round = 0; round < ROUNDS; round++) {
      // Sessions die while requests are on their way and in flight.
      const inFlight = requests(round);
      terminated += await terminateSessions();
      answers.push(...(await Promise.all(inFlight)));
    }
    expect(terminated).toBeGreaterThan(0);
    const internal = answers.filter(
      (a) => a.status >= 500 && !(a.status === 503 && a.headers.get('retry-after') && unavailable(a)),
    );
    expect(
      internal.map((a) => `${a.status} ${a.text.slice(0, 300)}`),
      'every 5xx is 503 dependency.unavailable with Retry-After',
    ).toEqual([]);
    const inside200 = answers.filter((a) => a.status < 300 && JSON.stringify(a.json ?? {}).includes('INTERNAL_SERVER_ERROR'));
    expect(inside200.map((a) => a.text.slice(0, 300))).toEqual([]);
  });
});

function unavailable(answer: HttpAnswer): boolean {
  const json = answer.json as { code?: string; errors?: Array<{ extensions?: { code?: string } }> } | undefined;
  return json?.code === 'dependency.unavailable' || json?.errors?.[0]?.extensions?.code === 'dependency.unavailable';
}
