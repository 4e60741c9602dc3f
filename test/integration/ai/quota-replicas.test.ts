import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { createRedis, waitForRedis } from '../../../platform/redis.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { seedBaseline } from '../../../subgraphs/ai/seed.js';
import { createAiServices, type AiServices } from '../../../subgraphs/ai/services.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { privateServicesAvailable, startPrivateRedis, type PrivateRedis } from '../../support/private-services.js';
import { closedPort } from './support.js';

/**
 * Issue #22, item 7: with Redis down, each AI replica falls back to a local request cap. The
 * documented share (QUOTA_FALLBACK_RPM_PERCENT) is what the deployment admits as a whole, so N
 * replicas divide it by N (configured with QUOTA_FALLBACK_REPLICAS, or counted in Redis while it
 * was up). Two AI service instances share one database and one configuration here, as two
 * replicas behind a balancer do.
 */

// A frozen clock mid-minute: the test counts admissions in one fallback window.
const FROZEN = new Date('2026-11-21T10:15:30Z');
const LIMIT = 20;
const PERCENT = 50;
const SHARE = (LIMIT * PERCENT) / 100;

let db: TestDatabase;
const opened: Array<{ redis: Redis }> = [];

beforeAll(async () => {
  db = await createTestDatabase();
  await seedBaseline(db.prisma, { hostedModel: 'gpt-4o-mini', logger: silentLogger });
});
afterAll(async () => {
  await db?.close();
});
afterEach(() => {
  for (const { redis } of opened.splice(0)) redis.disconnect();
});

/** One AI replica: the subgraph's services on the shared database, Redis at `redisUrl`. */
function replica(redisUrl: string, env: Record<string, string>): AiServices {
  const redis = createRedis(redisUrl, silentLogger);
  opened.push({ redis });
  const config = loadSystemConfig({ AI_CONFIG_CACHE_MS: '0', QUOTA_FALLBACK_RPM_PERCENT: String(PERCENT), ...env });
  return createAiServices({ config, db: db.prisma, logger: silentLogger, redis, clock: { now: () => FROZEN } });
}

async function rateLimitedTenant(): Promise<string> {
  const tenantId = newId('tenant');
  await db.prisma.tenantSettings.create({
    data: { tenantId, quotaEnabled: true, requestsPerMinute: LIMIT, tokensPerDay: 0 },
  });
  return tenantId;
}

/** `count` assists of `tenantId` on one replica, one after another; how many were admitted and how the rest were refused. */
async function assists(services: AiServices, tenantId: string, count: number): Promise<{ admitted: number; codes: string[] }> {
  let admitted = 0;
  const codes: string[] = [];
  for (let i = 0; i < count; i++) {
    try {
      await services.assistPipeline.run(
        {
          tenantId,
          subject: 'svc-consumer',
          requestId: `req-${i}`,
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
          locales: ['en'],
          logger: silentLogger,
        },
        { featureKey: 'portal.triage', variables: { message: 'dizzy' }, context: { facilityId: 'f', specialty: 's' } },
      );
      admitted += 1;
    } catch (error) {
      codes.push((error as { code?: string }).code ?? String(error));
    }
  }
  return { admitted, codes };
}

describe('quota fallback with two replicas and Redis unreachable', () => {
  it(`admits at most ${PERCENT} % of the limit in total when QUOTA_FALLBACK_REPLICAS=2`, async () => {
    const down = `redis://127.0.0.1:${await closedPort()}`;
    const env = { QUOTA_FALLBACK_REPLICAS: '2' };
    const [one, two] = [replica(down, { ...env, SERVICE_INSTANCE: 'ai-1' }), replica(down, { ...env, SERVICE_INSTANCE: 'ai-2' })];
    const tenantId = await rateLimitedTenant();
    const [first, second] = [await assists(one, tenantId, LIMIT), await assists(two, tenantId, LIMIT)];
    expect(first.admitted + second.admitted).toBeLessThanOrEqual(SHARE);
    // Each replica takes its half: the fallback still serves, it does not refuse everything.
    expect(first.admitted).toBe(SHARE / 2);
    expect(second.admitted).toBe(SHARE / 2);
    expect(new Set([...first.codes, ...second.codes])).toEqual(new Set(['quota.exceeded']));
    expect(await one.quota.health()).toMatchObject({ status: 'degraded', fallbackReplicas: 2 });
  });

  it('refuses with 503 quota.unavailable when the share is under one request per replica', async () => {
    const down = `redis://127.0.0.1:${await closedPort()}`;
    const services = replica(down, { QUOTA_FALLBACK_REPLICAS: '16', SERVICE_INSTANCE: 'ai-1' });
    const { admitted, codes } = await assists(services, await rateLimitedTenant(), 3);
    expect(admitted).toBe(0);
    expect(codes).toEqual(['quota.unavailable', 'quota.unavailable', 'quota.unavailable']);
  });
});

describe.runIf(privateServicesAvailable('quota replica discovery', ['redis-server']))(
  'quota fallback with replicas counted in Redis before it went down',
  () => {
    let redis: PrivateRedis;
    beforeAll(async () => {
      redis = await startPrivateRedis();
    });
    afterAll(async () => {
      await redis?.destroy();
    });

    it(`two replicas that saw each other admit at most ${PERCENT} % of the limit in total, without QUOTA_FALLBACK_REPLICAS`, async () => {
      const [one, two] = [replica(redis.url, { SERVICE_INSTANCE: 'ai-1' }), replica(redis.url, { SERVICE_INSTANCE: 'ai-2' })];
      await Promise.all(opened.map(({ redis: client }) => waitForRedis(client)));
      // Both beat while Redis is up (the server does this every 5 s); the second beat of each sees both.
      for (const services of [one, two, one, two]) await services.replicaCensus.beat();
      expect([one.replicaCensus.lastCount(), two.replicaCensus.lastCount()]).toEqual([2, 2]);
      expect(await one.quota.health()).toMatchObject({ status: 'up', fallbackReplicas: 2 });

      await redis.stop('SIGKILL');
      const tenantId = await rateLimitedTenant();
      const [first, second] = [await assists(one, tenantId, LIMIT), await assists(two, tenantId, LIMIT)];
      expect(first.admitted + second.admitted).toBeLessThanOrEqual(SHARE);
      expect([first.admitted, second.admitted]).toEqual([SHARE / 2, SHARE / 2]);
      // A beat while Redis is down keeps the last count.
      await one.replicaCensus.beat();
      expect(one.replicaCensus.lastCount()).toBe(2);
    });
  },
);
