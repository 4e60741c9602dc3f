import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestFingerprint, scopedKey } from '../../platform/idempotency/idempotency.logic.js';
import { newId, newUlid } from '../../platform/ids.js';
import { realService } from '../support/services.js';
import { startSystemWithDatabase, type SystemProcess, type SystemWithDatabase } from '../support/system-process.js';
import type { TestDatabase } from '../support/database.js';

/**
 * Idempotency-Key on the running process, once per store: the database table (embedded mode)
 * and Redis (when REDIS_URL is set). Effects are counted in the database, not inferred from
 * responses.
 */
const redisUrl = realService('REDIS_URL');
const stores: Array<{ name: string; env: Record<string, string> }> = [
  { name: 'database table', env: {} },
  ...(redisUrl ? [{ name: 'redis', env: { REDIS_URL: redisUrl } }] : []),
];

const RULE_PATH = '/v1/admin/routing-rules';
const SUBJECT = 'svc:e2e';

describe.each(stores)('Idempotency-Key with the $name store', ({ name, env }) => {
  const tenant = newId('tenant');
  let system: SystemProcess;
  let db: TestDatabase;
  let running: SystemWithDatabase;
  let token: string;
  let redis: Redis | undefined;

  beforeAll(async () => {
    running = await startSystemWithDatabase(env);
    ({ system, db } = running);
    token = await system.mintToken(tenant, 'ai.admin ai.assist catalog.admin', { subject: SUBJECT });
    if (env.REDIS_URL) redis = new Redis(env.REDIS_URL);
  });

  afterAll(async () => {
    redis?.disconnect();
    // Stops the process running now, which after the restart case is not the first one.
    await running?.close();
  });

  const post = (path: string, body: unknown, key: string, as = token, tenantId = tenant) =>
    fetch(`${system.baseUrl}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${as}`,
        'x-tenant-id': tenantId,
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body: JSON.stringify(body),
    });

  async function burst(path: string, body: unknown, key: string, count: number) {
    const responses = await Promise.all(Array.from({ length: count }, () => post(path, body, key)));
    return Promise.all(
      responses.map(async (response) => ({
        status: response.status,
        replayed: response.headers.get('idempotent-replayed'),
        text: await response.text(),
      })),
    );
  }

  function expectOneExecution(results: Awaited<ReturnType<typeof burst>>, successStatus: number) {
    const originals = results.filter((r) => r.status === successStatus && r.replayed === null);
    const replays = results.filter((r) => r.status === successStatus && r.replayed === 'true');
    const inFlight = results.filter((r) => r.status === 409);
    expect(
      originals,
      JSON.stringify(results.filter((r) => r.status !== successStatus && r.status !== 409).slice(0, 3)),
    ).toHaveLength(1);
    expect(
      originals.length + replays.length + inFlight.length,
      JSON.stringify(results.filter((r) => r.status !== successStatus && r.status !== 409)),
    ).toBe(results.length);
    for (const replay of replays) expect(replay.text).toBe(originals[0].text);
    for (const conflict of inFlight)
      expect(JSON.parse(conflict.text)).toMatchObject({ code: 'idempotency.in_flight', status: 409 });
    return originals[0];
  }

  it('100 concurrent identical routing-rule POSTs with one key create exactly one rule', async () => {
    const body = {
      featureKey: 'portal.triage',
      residency: 'ON_PREM',
      primary: { provider: 'mock', model: 'burst' },
      fallbacks: [],
    };
    const original = expectOneExecution(await burst(RULE_PATH, body, newUlid(), 100), 201);
    const ruleId = JSON.parse(original.text).ruleId;
    expect(await db.prisma.providerRoutingRule.count({ where: { tenantId: tenant, residency: 'ON_PREM' } })).toBe(1);
    expect(await db.prisma.providerRoutingRule.count({ where: { id: ruleId } })).toBe(1);
  });

  it('100 concurrent identical assist POSTs with one key record exactly one provenance', async () => {
    const body = {
      featureKey: 'portal.triage',
      variables: { message: 'burst' },
      context: { facilityId: `fac-${name}`, specialty: 'gp' },
    };
    const original = expectOneExecution(await burst('/v1/ai/assist', body, newUlid(), 100), 200);
    expect(JSON.parse(original.text).provenanceId).toMatch(/^prv_/);
    expect(await db.prisma.aIProvenance.count({ where: { tenantId: tenant, facilityId: `fac-${name}` } })).toBe(1);
  });

  it('replays byte for byte, refuses the key for another request, and scopes keys by tenant', async () => {
    const key = newUlid();
    const body = {
      featureKey: 'portal.triage',
      primary: { provider: 'mock', model: 'replay' },
      fallbacks: [{ provider: 'mock', model: 'b' }],
    };
    const first = await post(RULE_PATH, body, key);
    const firstBytes = Buffer.from(await first.arrayBuffer());
    expect(first.status).toBe(201);
    const replay = await post(RULE_PATH, body, key);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(Buffer.from(await replay.arrayBuffer()).equals(firstBytes)).toBe(true);

    const reused = await post(RULE_PATH, { ...body, featureKey: 'virtual_care.soap_scaffold' }, key);
    expect(reused.status).toBe(422);
    expect(await reused.json()).toMatchObject({ code: 'idempotency.key_reused' });

    const otherTenant = newId('tenant');
    const otherToken = await system.mintToken(otherTenant, 'ai.admin', { subject: SUBJECT });
    const elsewhere = await post(RULE_PATH, body, key, otherToken, otherTenant);
    expect(elsewhere.status).toBe(201);
    expect(elsewhere.headers.get('idempotent-replayed')).toBeNull();
    expect(await db.prisma.providerRoutingRule.count({ where: { tenantId: otherTenant } })).toBe(1);
  });

  it('answers 409 while a request holds the key, and lets a retry run once a crashed holder’s lease expires', async () => {
    const key = newUlid();
    const body = { residency: 'EU', primary: { provider: 'mock', model: 'lease' }, fallbacks: [] };
    const stored = scopedKey({ tenantId: tenant, subject: SUBJECT, route: 'rest:ai.routing-rules.create' }, key);
    const fingerprint = requestFingerprint('POST', RULE_PATH, body);
    // A request that started and then died with its process: only its in-flight record is left.
    const hold = async (expiresAt: number) => {
      if (redis) {
        await redis.set(
          `idem:${stored}`,
          JSON.stringify({ fingerprint, state: 'in_flight', token: 'crashed', expiresAt }),
          'PX',
          60_000,
        );
      } else {
        await db.prisma.idempotencyRecord.upsert({
          where: { key: stored },
          create: { key: stored, fingerprint, state: 'in_flight', headers: { lease: 'crashed' }, expiresAt: new Date(expiresAt) },
          update: { expiresAt: new Date(expiresAt) },
        });
      }
    };
    await hold(Date.now() + 60_000);
    const blocked = await post(RULE_PATH, body, key);
    expect(blocked.status).toBe(409);
    // Retry-After is what is left of the holder's lease (about 60 s here), never a blind 1 s.
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThanOrEqual(58);
    expect(Number(blocked.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(await blocked.json()).toMatchObject({ code: 'idempotency.in_flight' });
    expect(await db.prisma.providerRoutingRule.count({ where: { tenantId: tenant, residency: 'EU' } })).toBe(0);

    await hold(Date.now() - 1_000);
    const retried = await post(RULE_PATH, body, key);
    expect(retried.status).toBe(201);
    expect(await db.prisma.providerRoutingRule.count({ where: { tenantId: tenant, residency: 'EU' } })).toBe(1);
    expect((await post(RULE_PATH, body, key)).headers.get('idempotent-replayed')).toBe('true');
  });

  it('keeps completed keys across a restart of the process', async () => {
    const key = newUlid();
    const body = {
      featureKey: 'medication.reconciliation_assist',
      primary: { provider: 'mock', model: 'restart' },
      fallbacks: [],
    };
    const first = await post(RULE_PATH, body, key);
    expect(first.status).toBe(201);
    const firstText = await first.text();

    system = await running.restart();
    const replay = await post(RULE_PATH, body, key);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.text()).toBe(firstText);
    expect(
      await db.prisma.providerRoutingRule.count({ where: { tenantId: tenant, featureKey: 'medication.reconciliation_assist' } }),
    ).toBe(1);
  });
});
