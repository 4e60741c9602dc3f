/**
 * Exponential backoff with "equal jitter": half the delay is fixed, half random, so replicas that
 * failed together do not retry together, yet no retry comes sooner than half the step.
 */
export function retryDelayMs(
  attempt: number,
  options: { baseMs: number; maxMs: number },
  random: () => number = Math.random,
): number {
  const step = Math.min(options.maxMs, options.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(step / 2 + random() * (step / 2));
}
