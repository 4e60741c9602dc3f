import { manualClock } from '../../../platform/clock.js';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUlid } from '../../../platform/ids.js';
import { createDatabaseIdempotencyStore } from '../../../platform/idempotency/database-store.js';
import type { StoredResponse } from '../../../platform/idempotency/idempotency.logic.js';
import { createRedisIdempotencyStore } from '../../../platform/idempotency/redis-store.js';
import type { IdempotencyStore, StoreTiming } from '../../../platform/idempotency/store.js';
import { waitForRedis } from '../../../platform/redis.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';
import { realService } from '../../support/services.js';

/** One contract, every implementation: the database table on each database kind, and Redis. */
interface Harness {
  name: string;
  open(timing: StoreTiming): IdempotencyStore;
  close(): Promise<void>;
}

const redisUrl = realService('REDIS_URL');
const harnesses: Array<{ name: string; start(): Promise<Harness> }> = [
  ...databaseKinds().map((kind) => ({
    name: `database (${kind})`,
    async start(): Promise<Harness> {
      const db: TestDatabase = await createTestDatabase(kind);
      return { name: kind, open: (timing) => createDatabaseIdempotencyStore(db.prisma, timing), close: () => db.close() };
    },
  })),
  ...(redisUrl
    ? [
        {
          name: 'redis',
          async start(): Promise<Harness> {
            const redis = new Redis(redisUrl, { lazyConnect: false });
            await waitForRedis(redis);
            // A prefix of its own per run: runs never see each other's keys.
            const prefix = `idem-test:${randomUUID()}:`;
            return {
              name: 'redis',
              open: (timing) => createRedisIdempotencyStore(redis, timing, prefix),
              close: async () => {
                const keys = await redis.keys(`${prefix}*`);
                if (keys.length) await redis.del(...keys);
                redis.disconnect();
              },
            };
          },
        },
      ]
    : []),
];

const response = (status: number, body: unknown): StoredResponse => ({
  status,
  headers: { 'content-type': 'application/json; charset=utf-8', etag: '"e1"' },
  body: JSON.stringify(body),
});

describe.each(harnesses)('idempotency store contract: $name', ({ start }) => {
  let harness: Harness;
  const clock = manualClock(new Date(Date.UTC(2026, 10, 21, 12)));
  const timing: StoreTiming = { ttlSeconds: 24 * 3600, leaseSeconds: 60, clock };
  let store: IdempotencyStore;
  const key = () => `ten_${newUlid()}|usr|rest:test|${newUlid()}`;

  beforeAll(async () => {
    harness = await start();
    store = harness.open(timing);
  });
  afterAll(async () => harness?.close());

  it('takes a free key, then reports it in flight to the same request and reused to another', async () => {
    const k = key();
    const first = await store.begin(k, 'fp-a');
    expect(first.kind).toBe('started');
    expect((await store.begin(k, 'fp-a')).kind).toBe('in_flight');
    expect((await store.begin(k, 'fp-b')).kind).toBe('mismatch');
  });

  it('replays the stored status, headers and body exactly after completion', async () => {
    const k = key();
    const begun = await store.begin(k, 'fp-a');
    if (begun.kind !== 'started') throw new Error(`expected started, got ${begun.kind}`);
    const stored = response(201, { ruleId: 'rtr_1', text: 'ünïcødé ✓' });
    expect(await store.complete(begun.lease, stored)).toBe(true);
    expect(await store.begin(k, 'fp-a')).toEqual({ kind: 'replay', response: stored });
    expect((await store.begin(k, 'fp-b')).kind).toBe('mismatch');
  });

  it('frees a released key for the same request', async () => {
    const k = key();
    const begun = await store.begin(k, 'fp-a');
    if (begun.kind !== 'started') throw new Error(`expected started, got ${begun.kind}`);
    expect(await store.release(begun.lease)).toBe(true);
    const again = await store.begin(k, 'fp-a');
    expect(again.kind).toBe('started');
  });

  it('lets a new request take over an expired lease, and the old holder can no longer settle', async () => {
    const k = key();
    const crashed = await store.begin(k, 'fp-a');
    if (crashed.kind !== 'started') throw new Error(`expected started, got ${crashed.kind}`);
    clock.advance(59_000);
    expect((await store.begin(k, 'fp-a')).kind).toBe('in_flight');
    clock.advance(2_000);
    const retry = await store.begin(k, 'fp-a');
    if (retry.kind !== 'started') throw new Error(`expected started after the lease, got ${retry.kind}`);
    expect(await store.complete(crashed.lease, response(200, { late: true }))).toBe(false);
    expect(await store.release(crashed.lease)).toBe(false);
    expect(await store.complete(retry.lease, response(200, { winner: true }))).toBe(true);
    const replay = await store.begin(k, 'fp-a');
    expect(replay.kind === 'replay' && JSON.parse(replay.response.body)).toEqual({ winner: true });
  });

  it('tells a retry what is left of the holder lease', async () => {
    const k = key();
    expect((await store.begin(k, 'fp-a')).kind).toBe('started');
    clock.advance(15_000);
    expect(await store.begin(k, 'fp-a')).toEqual({ kind: 'in_flight', retryAfterMs: 45_000 });
  });

  it('keeps a renewed lease past its first expiry, and a lost lease cannot be renewed', async () => {
    const k = key();
    const holder = await store.begin(k, 'fp-a');
    if (holder.kind !== 'started') throw new Error(`expected started, got ${holder.kind}`);
    clock.advance(40_000);
    expect(await store.renew(holder.lease)).toBe(true);
    clock.advance(40_000);
    // 80 s after begin: without the renewal the 60 s lease would have run out.
    expect(await store.begin(k, 'fp-a')).toEqual({ kind: 'in_flight', retryAfterMs: 20_000 });
    clock.advance(21_000);
    // The holder stopped renewing (it died): its key is taken over, and it cannot get it back.
    const retry = await store.begin(k, 'fp-a');
    if (retry.kind !== 'started') throw new Error(`expected started after the lease, got ${retry.kind}`);
    expect(await store.renew(holder.lease)).toBe(false);
    expect(await store.renew(retry.lease)).toBe(true);
    expect(await store.complete(retry.lease, response(200, { winner: true }))).toBe(true);
    expect(await store.renew(retry.lease)).toBe(false);
  });

  it('keeps a completed record for the retention period and not longer', async () => {
    const k = key();
    const begun = await store.begin(k, 'fp-a');
    if (begun.kind !== 'started') throw new Error(`expected started, got ${begun.kind}`);
    await store.complete(begun.lease, response(200, { n: 1 }));
    clock.advance(24 * 3600 * 1000 - 1_000);
    expect((await store.begin(k, 'fp-a')).kind).toBe('replay');
    clock.advance(2_000);
    expect((await store.begin(k, 'fp-b')).kind).toBe('started');
  });

  it('gives a key to exactly one of many concurrent requests', async () => {
    const k = key();
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => store.begin(k, 'fp-a')));
    expect(outcomes.filter((o) => o.kind === 'started')).toHaveLength(1);
    expect(outcomes.filter((o) => o.kind === 'in_flight')).toHaveLength(49);
  });

  it('keeps records across store instances (a restart)', async () => {
    const k = key();
    const begun = await store.begin(k, 'fp-a');
    if (begun.kind !== 'started') throw new Error(`expected started, got ${begun.kind}`);
    await store.complete(begun.lease, response(200, { kept: true }));
    const restarted = harness.open(timing);
    const replay = await restarted.begin(k, 'fp-a');
    expect(replay.kind === 'replay' && JSON.parse(replay.response.body)).toEqual({ kept: true });
  });
});
