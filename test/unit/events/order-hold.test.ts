import { describe, expect, it } from 'vitest';
import { deadLetterMark, heldCandidates, holdLimitMs, raisedFloor } from '../../../events/ordering/order-hold.logic.js';

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

  describe("the guard's own floor", () => {
    const entry = (seq: number, settled: boolean, options: { inHand?: boolean; since?: number } = {}) => ({
      seq,
      settled,
      inHand: options.inHand ?? false,
      since: options.since ?? 1_000,
    });
    const limit = 60_000;

    it('rises past every settled message up to the first unsettled one', () => {
      const entries = [entry(11, true), entry(13, true), entry(14, false), entry(15, true)];
      expect(raisedFloor(10, entries, 15, 2_000, limit)).toEqual({ floor: 13, passedUnsettled: [] });
    });

    it('rises to what was scanned when everything there is settled, and never past it', () => {
      // 12 and 16 are other subjects' (not the consumer's); 17 was received but the stream not read that far.
      const entries = [entry(11, true), entry(13, true), entry(17, true, { inHand: true })];
      expect(raisedFloor(10, entries, 16, 2_000, limit)).toEqual({ floor: 16, passedUnsettled: [] });
    });

    it('passes a message elsewhere that stayed unsettled past the hold limit, reporting it', () => {
      const entries = [entry(11, false, { since: 0 }), entry(12, true), entry(13, false, { since: 50_000 })];
      expect(raisedFloor(10, entries, 13, limit, limit)).toEqual({ floor: 12, passedUnsettled: [11] });
    });

    it('never passes a message in this process’s hands, however old', () => {
      const entries = [entry(11, false, { inHand: true, since: 0 }), entry(12, true)];
      expect(raisedFloor(10, entries, 12, 10 * limit, limit)).toEqual({ floor: 10, passedUnsettled: [] });
    });

    it('never lowers the floor', () => {
      expect(raisedFloor(20, [entry(11, false)], 15, 2_000, limit)).toEqual({ floor: 20, passedUnsettled: [] });
    });
  });
});
