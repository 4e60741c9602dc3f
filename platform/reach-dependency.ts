/**
 * Start-up against a service named by an environment variable (DATABASE_URL, NATS_URL,
 * REDIS_URL). A service that cannot be reached stops start-up with one line that names the
 * variable and the address — never a stack trace, never the URL's credentials — so the operator
 * sees which setting to check. Once running, a lost service degrades instead (docs/reliability.md).
 */
import type { Logger } from './observability/logger.js';

/** How long start-up waits for a service before it gives up. */
export const STARTUP_REACH_MS = 10_000;

export class DependencyUnreachableError extends Error {
  override name = 'DependencyUnreachableError';

  constructor(
    readonly variable: string,
    readonly address: string,
    readonly reason: string,
  ) {
    super(`${variable}: cannot reach ${address} (${reason})`);
  }
}

/**
 * A dependency answered but is set up in a way this process must not run on (a Redis that would
 * evict quota and Idempotency-Key records). The entry point exits with this one line.
 */
export class DependencyMisconfiguredError extends Error {
  override name = 'DependencyMisconfiguredError';

  constructor(
    readonly variable: string,
    readonly address: string,
    readonly problem: string,
  ) {
    super(`${variable}: ${address} ${problem}`);
  }
}

/**
 * The URL without user, password or query (where libpq and Redis URLs may carry a password); each
 * one of a comma-separated list of URLs (NATS_URL's server list).
 */
export function redactUrl(raw: string): string {
  const list = raw.split(',').map((part) => part.trim());
  if (list.length > 1 && list.every((part) => /^[a-z][a-z0-9+.-]*:\/\//i.test(part))) return list.map(redactUrl).join(',');
  try {
    const url = new URL(raw);
    return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
  } catch {
    return '(an unparsable URL)';
  }
}

/** The first line of what went wrong, with any `//user:password@` taken out. */
export function reasonOf(error: unknown): string {
  const e = error as { message?: string; code?: string; errors?: Array<{ message?: string }> } | undefined;
  // Node reports a refused connection to a host with several addresses as an AggregateError
  // with an empty message; its parts say what happened.
  const text = e?.message || e?.errors?.[0]?.message || e?.code || String(error);
  return text.split('\n')[0].replace(/\/\/[^/@\s]*@/g, '//');
}

/**
 * Runs `connect` against the service at `url` for at most `timeoutMs`; any failure becomes a
 * DependencyUnreachableError naming `variable`. A connect that outlives the bound is left behind:
 * the process is about to exit.
 */
export async function reachDependency<T>(
  variable: string,
  url: string,
  connect: () => Promise<T>,
  timeoutMs = STARTUP_REACH_MS,
  /** Undoes a connect that succeeds after the bound (when the caller goes on trying). */
  discardLate?: (late: T) => unknown,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(new DependencyUnreachableError(variable, redactUrl(url), `no answer within ${timeoutMs / 1000} s`));
    }, timeoutMs);
  });
  const attempt = connect();
  if (discardLate) {
    attempt.then(
      (late) => (timedOut ? discardLate(late) : undefined),
      () => undefined,
    );
  }
  try {
    return await Promise.race([attempt, deadline]);
  } catch (error) {
    if (error instanceof DependencyUnreachableError) throw error;
    throw new DependencyUnreachableError(variable, redactUrl(url), reasonOf(error));
  } finally {
    clearTimeout(timer);
  }
}

export interface RetryOptions {
  /** How long to go on trying in all (STARTUP_RETRY in platform/config/link-liveness.ts). */
  retryForMs: number;
  firstDelayMs: number;
  maxDelayMs: number;
  /** Bound on one attempt. */
  attemptMs?: number;
  logger: Pick<Logger, 'warn'>;
  /** What the progress lines call the service (e.g. NATS): the variable is named only by the final error. */
  service: string;
  /** Undoes an attempt that succeeds after its bound. */
  discardLate?: (late: unknown) => unknown;
}

/**
 * reachDependency, tried again until `retryForMs` has passed: for a service that may be briefly
 * unable to answer while the part starts (a NATS cluster electing a leader, one of its servers
 * down). Each failed attempt is logged; the last failure is thrown, naming how long it tried.
 */
export async function reachDependencyRetrying<T>(
  variable: string,
  url: string,
  connect: () => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const started = performance.now();
  for (let attempt = 1; ; attempt++) {
    const attemptMs = options.attemptMs ?? STARTUP_REACH_MS;
    // The first attempt has its whole bound; a retry, what is left of the time.
    const left = options.retryForMs - (performance.now() - started);
    try {
      return await reachDependency(
        variable,
        url,
        connect,
        attempt === 1 ? attemptMs : Math.max(1, Math.min(attemptMs, left)),
        options.discardLate,
      );
    } catch (error) {
      const failure = error as DependencyUnreachableError;
      const delayMs = retryDelay(attempt, options);
      const elapsed = performance.now() - started;
      if (elapsed + delayMs >= options.retryForMs) {
        if (attempt === 1) throw failure;
        throw new DependencyUnreachableError(
          variable,
          failure.address,
          `${failure.reason}; tried ${attempt} times in ${Math.round(elapsed / 1000)} s`,
        );
      }
      // Progress, not the verdict: the one line naming the variable is the error, if it comes to that.
      options.logger.warn(
        { service: options.service, address: failure.address, attempt, reason: failure.reason, retryInMs: delayMs },
        `${options.service} not reachable yet; trying again`,
      );
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

/** The wait after the `attempt`-th failure: doubling from firstDelayMs up to maxDelayMs. */
export function retryDelay(attempt: number, options: Pick<RetryOptions, 'firstDelayMs' | 'maxDelayMs'>): number {
  return Math.min(options.maxDelayMs, options.firstDelayMs * 2 ** (attempt - 1));
}
