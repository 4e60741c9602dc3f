import { Redis } from 'ioredis';
import { REDIS_LIVENESS } from './config/link-liveness.js';
import type { Logger } from './observability/logger.js';
import { DependencyMisconfiguredError, reachDependency, redactUrl } from './reach-dependency.js';

/**
 * One Redis connection per process. The offline queue is off and retries per request are bounded,
 * so a Redis outage shows up as fast errors the callers can degrade on (quota, idempotency)
 * instead of requests hanging; the client keeps reconnecting in the background.
 */
export function createRedis(url: string, logger: Logger, options: { quietUntilReady?: boolean } = {}): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    // A half-open link fails commands within seconds; replaceWhenSilent replaces it (platform/config/link-liveness.ts).
    keepAlive: REDIS_LIVENESS.keepAliveMs,
    connectTimeout: REDIS_LIVENESS.connectTimeoutMs,
    commandTimeout: REDIS_LIVENESS.commandTimeoutMs,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    lazyConnect: false,
  });
  // With quietUntilReady, errors before the first `ready` are for whoever waits on it (connectRedis).
  let watching = !options.quietUntilReady;
  let reported = false;
  redis.on('error', (error) => {
    if (watching && !reported) logger.warn({ err: error.message }, 'redis unavailable; retrying');
    reported = watching;
  });
  redis.on('ready', () => {
    if (reported) logger.info('redis connection restored');
    reported = false;
    watching = true;
  });
  replaceWhenSilent(redis, logger);
  return redis;
}

/**
 * A half-open link (a frozen server, a silent partition, a dead NAT entry) never closes by itself:
 * commands time out one by one while ioredis keeps the socket. A PING every pingIntervalMs while
 * ready; maxPingOut timed-out PINGs in a row end the socket and let ioredis reconnect, which
 * reaches whatever answers at the address now (platform/config/link-liveness.ts has the bound).
 * Only timeouts count: a refused or closed connection is ioredis's own reconnect to handle.
 */
function replaceWhenSilent(redis: Redis, logger: Logger): void {
  let unanswered = 0;
  let lastAnswerAt = Date.now();
  const answered = () => {
    unanswered = 0;
    lastAnswerAt = Date.now();
  };
  const timer = setInterval(() => {
    if (redis.status !== 'ready') return;
    redis.ping().then(answered, (error: Error) => {
      if (error.message !== COMMAND_TIMED_OUT || redis.status !== 'ready') return;
      unanswered += 1;
      if (unanswered < REDIS_LIVENESS.maxPingOut) return;
      logger.warn(
        { unansweredPings: unanswered, sinceLastAnswerMs: Date.now() - lastAnswerAt },
        'redis stopped answering (half-open link); replacing the connection',
      );
      unanswered = 0;
      redis.disconnect(true);
    });
  }, REDIS_LIVENESS.pingIntervalMs);
  // The watch never keeps a process alive, and ends with the client (disconnect(), not a reconnect).
  timer.unref();
  redis.on('ready', answered);
  redis.once('end', () => clearInterval(timer));
}

/** ioredis's rejection of a command unanswered within commandTimeout (ioredis/built/Command.js). */
const COMMAND_TIMED_OUT = 'Command timed out';

/**
 * The process's Redis connection, once Redis has answered: an unreachable REDIS_URL stops
 * start-up (a misconfiguration should not look like an outage); a later outage only degrades.
 */
export async function connectRedis(url: string, logger: Logger, variable = 'REDIS_URL'): Promise<Redis> {
  const redis = createRedis(url, logger, { quietUntilReady: true });
  try {
    await reachDependency(
      variable,
      url,
      () =>
        new Promise<void>((resolve, reject) => {
          const ready = () => {
            redis.off('error', failed);
            resolve();
          };
          const failed = (error: Error) => {
            redis.off('ready', ready);
            reject(error);
          };
          redis.once('ready', ready);
          redis.once('error', failed);
        }),
    );
    return redis;
  } catch (error) {
    redis.disconnect();
    throw error;
  }
}

export async function waitForRedis(redis: Redis, timeoutMs = 5_000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('Redis did not become ready in time')), timeoutMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** `maxmemory-policy` values under which Redis deletes keys on its own when memory is full. */
export function evicts(info: { maxmemory: number; policy: string }): boolean {
  return info.maxmemory > 0 && info.policy !== 'noeviction';
}

/** The eviction settings from `INFO memory` (readable where CONFIG GET is disabled, as on managed Redis). */
export async function evictionSettings(redis: Redis): Promise<{ maxmemory: number; policy: string }> {
  const info = await redis.info('memory');
  const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
  return { maxmemory: Number(field('maxmemory') ?? 0), policy: field('maxmemory_policy') ?? 'unknown' };
}

/**
 * The Redis of REDIS_URL holds state that must not vanish: quota counters and Idempotency-Key
 * records. A Redis that evicts under memory pressure (any `maxmemory-policy` but `noeviction`,
 * once `maxmemory` is set; the volatile-* policies too, since every one of those keys has a TTL)
 * would silently hand a tenant a fresh quota or run a write twice. Refused at start unless the
 * operator says otherwise (`REDIS_ALLOW_EVICTION=true`), then warned about loudly.
 */
export async function checkStateRedis(
  redis: Redis,
  url: string,
  options: { allowEviction: boolean; logger: Logger },
): Promise<void> {
  const settings = await evictionSettings(redis);
  if (!evicts(settings)) return;
  const problem =
    `evicts keys when full (maxmemory ${settings.maxmemory}, maxmemory-policy ${settings.policy}), ` +
    'and it holds quotas and Idempotency-Key records: set maxmemory-policy noeviction there, ' +
    'and put caches on REDIS_CACHE_URL (docs/operations.md, "Redis")';
  if (!options.allowEviction) throw new DependencyMisconfiguredError('REDIS_URL', redactUrl(url), problem);
  options.logger.warn(
    { maxmemory: settings.maxmemory, policy: settings.policy },
    `REDIS_URL ${problem} (REDIS_ALLOW_EVICTION=true)`,
  );
}

/** The Redis of REDIS_URL, reached and checked: it must keep what it is given (see checkStateRedis). */
export async function connectStateRedis(url: string, options: { allowEviction: boolean; logger: Logger }): Promise<Redis> {
  const redis = await connectRedis(url, options.logger);
  try {
    await checkStateRedis(redis, url, options);
    return redis;
  } catch (error) {
    redis.disconnect();
    throw error;
  }
}
