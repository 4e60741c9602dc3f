/**
 * The one polling helper of the suites. A probe passes when it returns without throwing and
 * without returning `false`; `eventually` calls it until it passes and returns its value, or,
 * once the deadline has passed, fails with the probe's last error. The deadline only turns a hang
 * into a failure: nothing waits longer than the probe needs.
 */
export interface EventuallyOptions {
  /** Default 30 s. */
  timeoutMs?: number;
  /** Pause between two calls of the probe; default 50 ms. */
  intervalMs?: number;
  /**
   * Checked before each call: an error when waiting longer is pointless (the process that was
   * to answer has exited); `eventually` then fails with it at once.
   */
  giveUpWhen?: () => Error | undefined;
}

export async function eventually<T>(
  probe: () => T | Promise<T>,
  what: string,
  options: EventuallyOptions = {},
): Promise<Exclude<T, false>> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const hopeless = options.giveUpWhen?.();
    if (hopeless) throw hopeless;
    const last = await attempt(probe);
    if (last.passed) return last.value as Exclude<T, false>;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${describe(last.error)}`, {
        cause: last.error,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
}

type Attempt<T> = { passed: true; value: T } | { passed: false; error: unknown };

async function attempt<T>(probe: () => T | Promise<T>): Promise<Attempt<T>> {
  try {
    const value = await probe();
    return value === false ? { passed: false, error: new Error('the probe answered false') } : { passed: true, value };
  } catch (error) {
    return { passed: false, error };
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
