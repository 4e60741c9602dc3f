import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../../platform/observability/logger.js';
import type { BusMessage } from '../../../events/bus/event-bus.js';
import { manualClock } from '../../../platform/clock.js';
import { HeldMessages } from '../../../events/ordering/held-messages.js';

function message(seq: number) {
  const calls: string[] = [];
  const m = {
    seq,
    working: () => calls.push('working'),
    nak: () => calls.push('nak'),
  } as unknown as BusMessage;
  return { m, calls };
}

describe('held messages', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  function setup(waiting: () => Map<number, number>) {
    const clock = manualClock();
    const released: number[][] = [];
    const held = new HeldMessages<{ m: BusMessage }>({
      keepAliveMs: 1_000,
      holdLimitMs: 60_000,
      clock,
      logger: silentLogger,
      recheck: async () => waiting(),
      release: (items) => released.push(items.map((i) => i.m.seq)),
    });
    return { clock, released, held };
  }

  it('keeps them in hand (ack wait restarted, no delivery spent) until their predecessor settles, then releases them in order', async () => {
    let blockers = new Map([
      [12, 5],
      [11, 5],
    ]);
    const { released, held } = setup(() => blockers);
    const [a, b] = [message(12), message(11)];
    held.hold(a, 5);
    held.hold(b, 5);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(released).toEqual([]);
    expect(a.calls.filter((c) => c === 'working').length).toBeGreaterThanOrEqual(1);
    expect(held.size).toBe(2);
    blockers = new Map();
    held.poke();
    await vi.advanceTimersByTimeAsync(10);
    expect(released).toEqual([[11, 12]]);
    expect(held.size).toBe(0);
    held.stop();
  });

  it('releases one past the hold limit anyway, counted', async () => {
    const { clock, released, held } = setup(() => new Map([[7, 3]]));
    held.hold(message(7), 3);
    await vi.advanceTimersByTimeAsync(600);
    expect(released).toEqual([]);
    clock.advance(60_000);
    await vi.advanceTimersByTimeAsync(600);
    expect(released).toEqual([[7]]);
    expect(held.expired).toBe(1);
    held.stop();
  });

  it('gives every held message back at once when stopping', () => {
    const { held } = setup(() => new Map([[9, 1]]));
    const held9 = message(9);
    held.hold(held9, 1);
    held.stop();
    expect(held9.calls).toEqual(['nak']);
    expect(held.size).toBe(0);
    const late = message(10);
    held.hold(late, 1);
    expect(late.calls).toEqual(['nak']);
  });
});
