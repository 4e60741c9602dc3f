/**
 * Start-up against a service named by an environment variable (DATABASE_URL, NATS_URL,
 * REDIS_URL). A service that cannot be reached stops start-up with one line that names the
 * variable and the address — never a stack trace, never the URL's credentials — so the operator
 * sees which setting to check. Once running, a lost service degrades instead (docs/reliability.md).
 */

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
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new DependencyUnreachableError(variable, redactUrl(url), `no answer within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([connect(), deadline]);
  } catch (error) {
    if (error instanceof DependencyUnreachableError) throw error;
    throw new DependencyUnreachableError(variable, redactUrl(url), reasonOf(error));
  } finally {
    clearTimeout(timer);
  }
}
