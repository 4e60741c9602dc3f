/**
 * The one clock shape of the project: time comes in as a dependency, so rules about time (TTLs,
 * retention, alerting, dual publishing, breaker cool-downs) are testable without waiting.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock a test moves by hand. */
export function manualClock(
  start: Date | string = '2026-11-21T00:00:00.000Z',
): Clock & { advance(ms: number): void; set(at: Date | string): void } {
  let current = new Date(start).getTime();
  return {
    now: () => new Date(current),
    advance: (ms) => {
      current += ms;
    },
    set: (at) => {
      current = new Date(at).getTime();
    },
  };
}
