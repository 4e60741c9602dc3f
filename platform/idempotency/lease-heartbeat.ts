/**
 * Keeps something alive while work runs: calls `beat` every `everyMs` until the returned stop
 * function is called. A beat still running is never overlapped by the next (a slow store must not
 * pile up renewals), and the timer never holds the process open.
 */
export type Heartbeat = (beat: () => Promise<void>) => () => void;

export function intervalHeartbeat(everyMs: number): Heartbeat {
  return (beat) => {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      void beat().finally(() => (running = false));
    }, everyMs);
    timer.unref();
    return () => clearInterval(timer);
  };
}

/** Three renewals per lease: a lease survives two missed beats (a pause, a slow store) before it lapses. */
export function renewEveryMs(leaseMs: number): number {
  return Math.max(50, Math.floor(leaseMs / 3));
}
