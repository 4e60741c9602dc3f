import { Redis } from 'ioredis';
import type { Logger } from './logger.js';
import { reachDependency } from './reach-dependency.js';

/**
 * One Redis connection per process. The offline queue is off and retries per request are bounded,
 * so a Redis outage shows up as fast errors the callers can degrade on (quota, idempotency)
 * instead of requests hanging; the client keeps reconnecting in the background.
 */
export function createRedis(url: string, logger: Logger, options: { quietUntilReady?: boolean } = {}): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
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
  return redis;
}

/**
 * The process's Redis connection, once Redis has answered: an unreachable REDIS_URL stops
 * start-up (a misconfiguration should not look like an outage); a later outage only degrades.
 */
export async function connectRedis(url: string, logger: Logger): Promise<Redis> {
  const redis = createRedis(url, logger, { quietUntilReady: true });
  try {
    await reachDependency(
      'REDIS_URL',
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
