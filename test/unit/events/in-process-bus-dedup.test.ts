import { describe, expect, it } from 'vitest';
import { createInProcessBus } from '../../../events/bus/in-process-bus.js';

/** A clock the test moves by hand. */
function handClock(startMs: number) {
  let nowMs = startMs;
  return { now: () => new Date(nowMs), advance: (ms: number) => (nowMs += ms) };
}

const bytes = (text: string) => new TextEncoder().encode(text);

describe('in-process bus: the Nats-Msg-Id duplicate window', () => {
  it('forgets an id once it is older than the window, and only then, oldest first', async () => {
    const clock = handClock(Date.UTC(2026, 10, 24));
    const bus = createInProcessBus({ clock });
    await bus.ensureStream({
      name: 'DEDUP',
      subjects: ['dedup.>'],
      maxAgeMs: 60 * 60_000,
      duplicateWindowMs: 1_000,
      storage: 'memory',
    });
    const first = await bus.publish('dedup.x', bytes('a'), { msgId: 'a' });
    clock.advance(600);
    const second = await bus.publish('dedup.x', bytes('b'), { msgId: 'b' });
    clock.advance(500); // a is 1,100 ms old, b 500 ms

    const againA = await bus.publish('dedup.x', bytes('a'), { msgId: 'a' });
    const againB = await bus.publish('dedup.x', bytes('b'), { msgId: 'b' });

    expect(againA).toEqual({ stream: 'DEDUP', seq: second.seq + 1, duplicate: false });
    expect(againB).toEqual({ stream: 'DEDUP', seq: second.seq, duplicate: true });
    expect(first.seq).toBe(1);

    clock.advance(501); // b is 1,001 ms old, the second a 501 ms
    expect((await bus.publish('dedup.x', bytes('b'), { msgId: 'b' })).duplicate).toBe(false);
    expect((await bus.publish('dedup.x', bytes('a'), { msgId: 'a' })).duplicate).toBe(true);
    await bus.close();
  });
});
