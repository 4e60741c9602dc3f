import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../../platform/clock.js';
import { isAppError } from '../../../platform/errors/errors.js';
import { newUlid } from '../../../platform/ids.js';
import { createDatabaseIdempotencyStore } from '../../../platform/idempotency/database-store.js';
import { runIdempotent } from '../../../platform/idempotency/guard.js';
import { scopedKey, type StoredResponse } from '../../../platform/idempotency/idempotency.logic.js';
import type { Heartbeat } from '../../../platform/idempotency/lease-heartbeat.js';
import type { IdempotencyStore } from '../../../platform/idempotency/store.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { eventually } from '../../support/eventually.js';

/** A heartbeat the test beats by hand, so the lease's life follows the manual clock exactly. */
function handHeartbeat() {
  let beat: (() => Promise<void>) | undefined;
  let stopped = false;
  const heartbeat: Heartbeat = (fn) => {
    beat = fn;
    return () => (stopped = true);
  };
  return {
    heartbeat,
    started: () => beat !== undefined,
    stopped: () => stopped,
    beat: () => (beat ? beat() : Promise.reject(new Error('the heartbeat was never started'))),
  };
}

const LEASE_SECONDS = 6;
const ok: StoredResponse = { status: 200, headers: { 'content-type': 'application/json' }, body: '{"done":true}' };

describe('an Idempotency-Key lease follows its holder', () => {
  let db: TestDatabase;
  let store: IdempotencyStore;
  const clock = manualClock('2026-11-26T10:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase();
    store = createDatabaseIdempotencyStore(db.prisma, { ttlSeconds: 86_400, leaseSeconds: LEASE_SECONDS, clock });
  });
  afterAll(async () => db?.close());

  /** Runs a request under its key that finishes when the test says so. */
  async function holdKey(req: ReturnType<typeof request>) {
    const hand = handHeartbeat();
    let finish!: (response: StoredResponse) => void;
    const running = runIdempotent(store, req, () => new Promise<StoredResponse>((resolve) => (finish = resolve)), silentLogger, {
      heartbeat: hand.heartbeat,
    });
    await eventually(() => hand.started(), 'the lease heartbeat to start');
    return { hand, finish, running };
  }

  const request = () => ({
    scope: { tenantId: 'ten_1', subject: 'svc:a', route: 'rest:test' },
    key: newUlid(),
    fingerprint: 'fp',
  });

  it('renews the lease while the request runs, so a slow request keeps its key past one lease', async () => {
    const req = request();
    const { hand, finish, running } = await holdKey(req);
    for (let beat = 0; beat < 3; beat++) {
      clock.advance(LEASE_SECONDS * 600);
      await hand.beat();
    }
    clock.advance(LEASE_SECONDS * 600);
    // 2.4 leases after the start the request still holds its key.
    const retry = await store.begin(scopedKey(req.scope, req.key), req.fingerprint);
    expect(retry).toEqual({ kind: 'in_flight', retryAfterMs: LEASE_SECONDS * 400 });
    finish(ok);
    expect((await running).response.body).toBe(ok.body);
    expect(hand.stopped()).toBe(true);
    expect((await store.begin(scopedKey(req.scope, req.key), req.fingerprint)).kind).toBe('replay');
  });

  it('answers a retry 409 with a Retry-After of what is left of the lease', async () => {
    const req = request();
    const { finish, running } = await holdKey(req);
    clock.advance(2_500);
    const refused = await runIdempotent(store, req, async () => ok, silentLogger).catch((error: unknown) => error);
    expect(isAppError(refused) && refused.code).toBe('idempotency.in_flight');
    expect(isAppError(refused) && refused.headers?.['retry-after']).toBe('4');
    finish(ok);
    await running;
  });

  it('frees the key of a holder that stopped renewing (it died) within one lease', async () => {
    const req = request();
    const key = scopedKey(req.scope, req.key);
    const dead = await store.begin(key, req.fingerprint);
    expect(dead.kind).toBe('started');
    clock.advance(LEASE_SECONDS * 1000 - 1);
    expect((await store.begin(key, req.fingerprint)).kind).toBe('in_flight');
    clock.advance(1);
    const result = await runIdempotent(store, req, async () => ok, silentLogger);
    expect(result).toEqual({ response: ok, replayed: false });
  });
});
