import { describe, expect, it } from 'vitest';
import { deadLetterMark, heldCandidates, holdLimitMs } from '../../../events/order-hold.logic.js';

const gap = (seq: number, key: string | undefined, settled = false) => ({ seq, key, settled });

describe('producer order: which messages wait', () => {
  it('lets a message go when every earlier message of its key is settled', () => {
    expect(heldCandidates([{ seq: 10, key: 'A' }], [gap(7, 'A', true), gap(8, 'B'), gap(9, 'A', true)])).toEqual(new Map());
  });

  it('holds a message behind the earliest unsettled message of its key, and only its key', () => {
    const held = heldCandidates(
      [
        { seq: 10, key: 'A' },
        { seq: 11, key: 'B' },
        { seq: 12, key: 'A' },
      ],
      [gap(5, 'A'), gap(7, 'A'), gap(8, 'B', true), gap(9, 'C')],
    );
    expect(held).toEqual(
      new Map([
        [10, 5],
        [12, 5],
      ]),
    );
  });

  it('does not hold a message for an earlier candidate of the same run, nor for one rejected on sight', () => {
    expect(
      heldCandidates(
        [
          { seq: 4, key: 'A' },
          { seq: 6, key: 'A' },
        ],
        [gap(4, 'A'), gap(5, undefined)],
      ),
    ).toEqual(new Map());
  });

  it('holds a message only behind earlier ones (the wait-for relation follows the stream, so it has no cycle)', () => {
    expect(heldCandidates([{ seq: 3, key: 'A' }], [gap(5, 'A')])).toEqual(new Map());
  });

  it('bounds the wait by what a predecessor can legitimately take, and marks dead letters by sequence and id', () => {
    expect(holdLimitMs({ maxDeliver: 6, ackWaitMs: 30_000, maxRetryDelayMs: 60_000 })).toBe(540_000);
    // A replay of a dead letter is a new stream message: the mark of the original does not settle it.
    expect(deadLetterMark(42, 'E1')).toBe('42:E1');
    expect(deadLetterMark(97, 'E1')).not.toBe(deadLetterMark(42, 'E1'));
  });
});
