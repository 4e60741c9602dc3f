import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../platform/observability/logger.js';
import { createRedis, waitForRedis } from '../../../platform/redis.js';
import { realService } from '../../support/services.js';
import { ASSIST, assistInput, closedPort, startAiHarness, type AiHarness } from './support.js';
import { testDatabaseKind } from '../../support/database.js';

const redisUrl = realService('REDIS_URL');
// A frozen clock mid-minute: the test is about counting, not about window boundaries.
const FROZEN = new Date('2026-11-21T10:15:30Z');
const triage = assistInput('portal.triage', { message: 'I feel dizzy' });

describe(`assist quota through the API (${redisUrl ? 'Redis' : 'in-memory store'})`, () => {
  let ai: AiHarness;
  let redis: Redis | undefined;

  beforeAll(async () => {
    if (redisUrl) {
      redis = createRedis(redisUrl, silentLogger);
      await waitForRedis(redis);
    }
    ai = await startAiHarness(testDatabaseKind(), {}, { redis, clock: { now: () => FROZEN } });
  });
  afterAll(async () => {
    await ai?.close();
    redis?.disconnect();
  });

  it('admits exactly the limit out of 200 concurrent assists, refusing the rest with Retry-After', async () => {
    const tenantId = `ten_01JD${Date.now()
      .toString(32)
      .toUpperCase()
      .replace(/[ILOU]/g, 'X')
      .padStart(22, '0')
      .slice(-22)}`;
    await ai.db.prisma.tenantSettings.create({ data: { tenantId, quotaEnabled: true, requestsPerMinute: 50, tokensPerDay: 0 } });
    const results = await Promise.all(
      Array.from({ length: 200 }, () => ai.gql<{ assist: { status: string } }>(ASSIST, triage, { tenantId })),
    );
    const completed = results.filter((r) => r.data?.assist?.status === 'completed');
    const refused = results.filter((r) => r.errors?.[0]?.extensions?.code === 'quota.exceeded');
    expect(completed.length).toBe(50);
    expect(refused.length).toBe(150);
    expect(refused[0].errors![0].extensions).toMatchObject({ limit: 'requests_per_minute', retryAfterSeconds: 30 });
    // Refused requests never reached a model: only the admitted ones left provenance.
    expect(await ai.db.prisma.aIProvenance.count({ where: { tenantId } })).toBe(50);
  });

  it('leaves tenants without quota alone', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => ai.gql<{ assist: { status: string } }>(ASSIST, triage)));
    expect(results.every((r) => r.data?.assist?.status === 'completed')).toBe(true);
  });
});

describe('assist quota with Redis down', () => {
  let ai: AiHarness;
  let redis: Redis;

  beforeAll(async () => {
    redis = createRedis(`redis://127.0.0.1:${await closedPort()}`, silentLogger);
    ai = await startAiHarness(testDatabaseKind(), { QUOTA_FALLBACK_RPM_PERCENT: '50' }, { redis, clock: { now: () => FROZEN } });
  });
  afterAll(async () => {
    await ai?.close();
    redis?.disconnect();
  });

  it('fails closed for a tenant with a token budget', async () => {
    const tenantId = 'ten_01JD00000000000000000TPD00';
    await ai.db.prisma.tenantSettings.create({
      data: { tenantId, quotaEnabled: true, requestsPerMinute: 100, tokensPerDay: 100_000 },
    });
    const result = await ai.gql(ASSIST, triage, { tenantId });
    expect(result.errors![0].extensions).toMatchObject({ code: 'quota.unavailable', status: 503, retryAfterSeconds: 5 });
  });

  it('caps a rate-only tenant locally at the configured share', async () => {
    const tenantId = 'ten_01JD00000000000000000RPM00';
    await ai.db.prisma.tenantSettings.create({ data: { tenantId, quotaEnabled: true, requestsPerMinute: 6, tokensPerDay: 0 } });
    const codes: string[] = [];
    for (let i = 0; i < 4; i++) {
      const result = await ai.gql<{ assist: { status: string } }>(ASSIST, triage, { tenantId });
      codes.push(result.data?.assist?.status ?? (result.errors![0].extensions!.code as string));
    }
    expect(codes).toEqual(['completed', 'completed', 'completed', 'quota.exceeded']);
  });

  it('keeps serving tenants without quota and reports the degradation on /v1/ai/health', async () => {
    expect((await ai.gql<{ assist: { status: string } }>(ASSIST, triage)).data!.assist.status).toBe('completed');
    const response = await fetch(new URL('/v1/ai/health', ai.url));
    const body = (await response.json()) as {
      status: string;
      dependencies: { quota: { status: string; store: string; detail: string } };
    };
    expect(response.status).toBe(200);
    expect(body.status).toBe('degraded');
    expect(body.dependencies.quota).toMatchObject({ status: 'degraded', store: 'redis' });
    expect(body.dependencies.quota.detail).toContain('token budgets fail closed');
  });
});
