import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors/errors.js';
import { keyedTransaction, recordedEffect } from '../../../platform/idempotency/effect-store.js';
import { effectClaim, type EffectClaim } from '../../../platform/idempotency/effect.logic.js';
import { newId, newUlid } from '../../../platform/ids.js';
import type { Tx } from '../../../platform/db/database.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';

/**
 * keyedTransaction on a real database: the effect row commits with the work or not at all, a
 * recorded effect is answered without running the work again, and two executions racing for one
 * key leave one effect.
 */
/** Claims and a countable effect (one sample row per execution, tagged) for one tenant. */
function fixtures(db: () => TestDatabase) {
  const tenantId = newId('tenant');
  const claimFor = (args: unknown = { samples: [1] }, ttlSeconds = 3600): EffectClaim =>
    effectClaim(
      { tenantId, subject: 'svc:test', field: 'recordLegacyLatencySamples', alias: 'r', args, idempotencyKey: newUlid() },
      ttlSeconds,
    );
  const writeSample = (tag: string) => async (tx: Tx) => {
    const row = await tx.shadowLatencySample.create({
      data: { tenantId, featureKey: tag, source: 'legacy', latencyMs: 1, recordedAt: new Date() },
    });
    return { id: row.id, recordedAt: row.recordedAt };
  };
  const samples = (tag: string) => db().prisma.shadowLatencySample.count({ where: { tenantId, featureKey: tag } });
  const fresh = (prefix: string) => `${prefix}.${newUlid().toLowerCase()}`;
  return { claimFor, writeSample, samples, fresh };
}

describe.each(databaseKinds())('keyedTransaction on %s', (kind) => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });
  afterAll(async () => {
    await db?.close();
  });

  const { claimFor, writeSample, samples, fresh } = fixtures(() => db);

  it('without a claim is a plain transaction: every call runs', async () => {
    const tag = fresh('plain');
    await keyedTransaction(db.prisma, undefined, writeSample(tag));
    await keyedTransaction(db.prisma, undefined, writeSample(tag));
    expect(await samples(tag)).toBe(2);
  });

  it('records the result with the work, and answers it to the same claim without running again', async () => {
    const tag = fresh('once');
    const claim = claimFor();
    const first = await keyedTransaction(db.prisma, claim, writeSample(tag));
    expect(claim.consumed).toBe(true);
    let ranAgain = false;
    const second = await keyedTransaction(db.prisma, { ...claim, consumed: false }, async (tx) => {
      ranAgain = true;
      return writeSample(tag)(tx);
    });
    expect(ranAgain).toBe(false);
    expect(second).toEqual(first);
    expect(second.recordedAt).toBeInstanceOf(Date);
    expect(await samples(tag)).toBe(1);
    expect(await recordedEffect(db.prisma, claim)).toEqual({ value: first });
  });

  it('records nothing when the work fails, so the retry runs', async () => {
    const tag = fresh('fails');
    const claim = claimFor();
    await expect(
      keyedTransaction(db.prisma, claim, async (tx) => {
        await writeSample(tag)(tx);
        throw new AppError('request.conflict', 'refused after writing');
      }),
    ).rejects.toMatchObject({ code: 'request.conflict' });
    expect(await samples(tag)).toBe(0);
    expect(await recordedEffect(db.prisma, claim)).toBeUndefined();
    await keyedTransaction(db.prisma, claim, writeSample(tag));
    expect(await samples(tag)).toBe(1);
  });

  it('refuses the key for other arguments with idempotency.key_reused, without running', async () => {
    const tag = fresh('reused');
    const claim = claimFor({ samples: [1] });
    await keyedTransaction(db.prisma, claim, writeSample(tag));
    const other = { ...claimFor({ samples: [2] }), key: claim.key };
    await expect(keyedTransaction(db.prisma, other, writeSample(tag))).rejects.toMatchObject({
      code: 'idempotency.key_reused',
      status: 422,
    });
    expect(await samples(tag)).toBe(1);
  });

  it('runs again once the recorded effect expired, and records the new one', async () => {
    const tag = fresh('expired');
    const claim = claimFor(undefined, 60);
    const first = await keyedTransaction(db.prisma, claim, writeSample(tag));
    const later = { now: () => new Date(Date.now() + 61_000) };
    const second = await keyedTransaction(db.prisma, claim, writeSample(tag), { clock: later });
    expect(second.id).not.toBe(first.id);
    expect(await samples(tag)).toBe(2);
    const third = await keyedTransaction(db.prisma, claim, writeSample(tag), { clock: later });
    expect(third).toEqual(second);
  });
});

// Racing needs two connections at once, as on every real server.
describe('keyedTransaction racing', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.close();
  });

  const { claimFor, writeSample, samples, fresh } = fixtures(() => db);

  it('two executions racing for one key leave one effect, and both answer it', async () => {
    const tag = fresh('race');
    const claim = claimFor();
    // Both executions are inside their transactions, past the lookup, before either records.
    let arrived = 0;
    let bothIn!: () => void;
    const barrier = new Promise<void>((resolve) => (bothIn = resolve));
    const racer = () =>
      keyedTransaction(db.prisma, { ...claim }, async (tx) => {
        arrived += 1;
        if (arrived === 2) bothIn();
        await barrier;
        return writeSample(tag)(tx);
      });
    const [a, b] = await Promise.all([racer(), racer()]);
    expect(a).toEqual(b);
    expect(await samples(tag)).toBe(1);
  });

  it('an execution refused because the racing one committed answers the committed effect', async () => {
    const tag = fresh('refused-race');
    const claim = claimFor();
    let firstInWork!: () => void;
    const firstStarted = new Promise<void>((resolve) => (firstInWork = resolve));
    let releaseFirst!: () => void;
    const firstMayFinish = new Promise<void>((resolve) => (releaseFirst = resolve));
    const first = keyedTransaction(db.prisma, { ...claim }, async (tx) => {
      firstInWork();
      await firstMayFinish;
      return writeSample(tag)(tx);
    });
    await firstStarted;
    const second = keyedTransaction(db.prisma, { ...claim }, async () => {
      // Past its lookup while the first is uncommitted; the first commits, then this one is
      // refused by the domain (as a routing rule's unique index would refuse the second rule).
      releaseFirst();
      await first;
      throw new AppError('request.conflict', 'a rule for this feature exists');
    });
    const [one, two] = await Promise.all([first, second]);
    expect(two).toEqual(one);
    expect(await samples(tag)).toBe(1);
  });
});
