import { describe, expect, it } from 'vitest';
import { afterRelayRun, inPartitions, reportedFailure } from '../../../events/publish/outbox-relay.logic.js';

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
});
