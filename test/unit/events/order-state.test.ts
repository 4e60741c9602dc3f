import { describe, expect, it } from 'vitest';
import { eventKey } from '../../../events/ledger/event-key.logic.js';
import { deadLetterMark } from '../../../events/ordering/order-hold.logic.js';
import {
  advance,
  concludeCheck,
  FLOOR_WRITE_INTERVAL_MS,
  gapToRead,
  initialOrderState,
  MAX_KNOWN,
  openInGap,
  settledByInbox,
  type Known,
  type OrderState,
} from '../../../events/ordering/order-state.logic.js';

const HOLD = 60_000;
const seen = (seq: number, key: string, at = 0) => ({ kind: 'seen', seq, key, eventId: `e${seq}`, tenantId: 't', at }) as const;
const stored = (seq: number, key: string | undefined) => ({
  seq,
  tenantId: 't',
  read: key === undefined ? undefined : { key, eventId: `e${seq}` },
});
/** A state whose floor is loaded at `floor`, as a first check leaves it. */
const loaded = (floor: number): OrderState => advance(initialOrderState, { floorLoaded: floor });

describe('order state', () => {
  it('knows what this process received, reads only the rest of the gap, and counts one rejected on sight as settled', () => {
    const state = advance(loaded(0), { local: [seen(2, 'A', 5)], gapFrom: 0 });
    expect(gapToRead(state, 3)).toEqual({ fromSeq: 1, toSeq: 3 });
    const read = advance(state, { gapRead: { top: 3, at: 9, messages: [stored(1, 'A'), stored(2, 'A'), stored(3, undefined)] } });
    expect(read.scannedThrough).toBe(3);
    expect(Object.fromEntries(read.known)).toEqual({
      1: { key: 'A', eventId: 'e1', tenantId: 't', settled: false, inHand: false, since: 9 },
      2: { key: 'A', eventId: 'e2', tenantId: 't', settled: false, inHand: true, since: 5 },
      3: { key: undefined, eventId: undefined, tenantId: 't', settled: true, inHand: false, since: 9 },
    });
    // Purity: the state it started from is as it was.
    expect([...state.known.keys()]).toEqual([2]);
    expect(state.scannedThrough).toBe(0);
  });

  it('skips the known run above the floor without reading it, and starts over past MAX_KNOWN', () => {
    const state = advance(loaded(0), { local: [seen(1, 'A'), seen(2, 'A')], gapFrom: 0 });
    expect(state.scannedThrough).toBe(2);
    expect(gapToRead(state, 2)).toBeUndefined();
    const crowded: OrderState = {
      ...state,
      known: new Map(Array.from({ length: MAX_KNOWN + 1 }, (_, i): [number, Known] => [i + 10, state.known.get(1)!])),
      scannedThrough: MAX_KNOWN + 10,
    };
    const restarted = advance(crowded, { gapFrom: 4 });
    expect(restarted.known.size).toBe(0);
    expect(restarted.scannedThrough).toBe(4);
  });

  it('applies what this process did in call order: settled only what it knows', () => {
    const state = advance(loaded(0), {
      local: [{ kind: 'settled', seq: 1 }, seen(1, 'A'), seen(2, 'B'), { kind: 'settled', seq: 2 }],
    });
    expect(state.known.get(1)?.settled).toBe(false);
    expect(state.known.get(2)?.settled).toBe(true);
  });

  it('asks the inbox only about open messages of the gap that are not candidates, and settles what it shows', () => {
    const state = advance(loaded(0), {
      gapFrom: 0,
      gapRead: { top: 4, at: 0, messages: [stored(1, 'A'), stored(2, 'B'), stored(3, undefined), stored(4, 'A')] },
    });
    const open = openInGap(state, [{ seq: 4, key: 'A' }], 0, 4);
    expect(open.map((m) => m.seq)).toEqual([1, 2]);
    const settled = settledByInbox(open, {
      handled: new Set([eventKey({ tenantId: 't', eventId: 'e1' })]),
      deadLettered: new Set([deadLetterMark(2, 'e2')]),
    });
    expect(settled).toEqual([1, 2]);
    expect(
      settledByInbox(open, { handled: new Set([eventKey({ tenantId: 'other', eventId: 'e1' })]), deadLettered: new Set() }),
    ).toEqual([]);
  });

  it('holds a candidate behind an earlier unsettled message of its key; the floor stops there, and is written at most once a second', () => {
    const state = advance(loaded(0), {
      local: [seen(3, 'A')],
      gapFrom: 0,
      gapRead: { top: 4, at: 0, messages: [stored(1, 'B'), stored(2, 'A'), stored(4, 'C')] },
      inboxSettled: [1],
    });
    const first = concludeCheck(state, { candidates: [{ seq: 5, key: 'A' }], from: 0, top: 4, now: 10, holdLimitMs: HOLD });
    expect(first.held).toEqual(new Map([[5, 2]]));
    expect(first.state.floor).toBe(1);
    expect([...first.state.known.keys()].sort()).toEqual([2, 3, 4]);
    expect(first.writeFloor).toBe(1);

    const later = advance(first.state, { inboxSettled: [2, 3, 4] });
    const soon = concludeCheck(later, {
      candidates: [{ seq: 5, key: 'A' }],
      from: 1,
      top: 4,
      now: 10 + FLOOR_WRITE_INTERVAL_MS - 1,
      holdLimitMs: HOLD,
    });
    expect(soon.held).toEqual(new Map());
    expect(soon.state.floor).toBe(4);
    expect(soon.writeFloor).toBeUndefined();
    const afterInterval = concludeCheck(soon.state, {
      candidates: [{ seq: 6, key: 'A' }],
      from: 4,
      top: 4,
      now: 10 + FLOOR_WRITE_INTERVAL_MS,
      holdLimitMs: HOLD,
    });
    // Nothing new to pass: the floor is where it was, so nothing is written either.
    expect(afterInterval.writeFloor).toBeUndefined();
    const next = advance(soon.state, { local: [seen(5, 'A'), { kind: 'settled', seq: 5 }], gapFrom: 4 });
    expect(
      concludeCheck(next, {
        candidates: [{ seq: 6, key: 'A' }],
        from: 4,
        top: 5,
        now: 10 + FLOOR_WRITE_INTERVAL_MS,
        holdLimitMs: HOLD,
      }).writeFloor,
    ).toBe(5);
  });

  it('passes a message unsettled elsewhere past the hold limit, naming it, but never one in this process’s hands', () => {
    const state = advance(loaded(0), {
      local: [seen(2, 'B', 0)],
      gapFrom: 0,
      gapRead: { top: 2, at: 0, messages: [stored(1, 'A')] },
    });
    const outcome = concludeCheck(state, { candidates: [{ seq: 3, key: 'C' }], from: 0, top: 2, now: HOLD, holdLimitMs: HOLD });
    expect(outcome.passedUnsettled).toEqual([{ seq: 1, eventId: 'e1' }]);
    expect(outcome.state.floor).toBe(1);
    expect([...outcome.state.known.keys()]).toEqual([2]);
  });
});
