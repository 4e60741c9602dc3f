import { describe, expect, it } from 'vitest';
import { afterRelayRun, inPartitions, reportedFailure, restOfRoundGapMs } from '../../../events/publish/outbox-relay.logic.js';

const row = (id: number, partitionKey: string) => ({ id: BigInt(id), partitionKey });

describe('outbox relay decisions', () => {
  it('publish each partition in id order, partitions side by side', () => {
    const partitions = inPartitions([row(1, 'a'), row(2, 'b'), row(3, 'a'), row(4, 'c'), row(5, 'b')]);
    expect(partitions.map((rows) => rows.map((r) => Number(r.id)))).toEqual([[1, 3], [2, 5], [4]]);
  });

  it('report the lowest-numbered failure of a round, whatever order the failures came in', () => {
    const failures = [
      { row: row(9, 'b'), error: 'late' },
      { row: row(4, 'a'), error: 'first' },
      { row: row(6, 'c'), error: 'middle' },
    ];
    expect(reportedFailure(failures)?.error).toBe('first');
    expect(reportedFailure([])).toBeUndefined();
  });

  it('run again at once only after a full batch under the lock', () => {
    expect(afterRelayRun({ locked: true, published: 100 }, 100)).toBe('more');
    expect(afterRelayRun({ locked: true, published: 99 }, 100)).toBe('idle');
    expect(afterRelayRun({ locked: false, published: 0 }, 0)).toBe('idle');
  });

  it('start a woken round no sooner than the gap after the previous round ended', () => {
    // Woken 5 ms after a round ended: 15 ms more of a 20 ms gap.
    expect(restOfRoundGapMs(1_000, 1_005, 20)).toBe(15);
    // After an idle poll interval (or any wait) longer than the gap: at once.
    expect(restOfRoundGapMs(1_000, 1_100, 20)).toBe(0);
    expect(restOfRoundGapMs(1_000, 1_020, 20)).toBe(0);
    // Before any round (the first one at start) and with no gap: at once.
    expect(restOfRoundGapMs(Number.NEGATIVE_INFINITY, 5, 20)).toBe(0);
    expect(restOfRoundGapMs(1_000, 1_001, 0)).toBe(0);
  });
});
