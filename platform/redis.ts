import { Redis } from 'ioredis';
import type { Logger } from './logger.js';

/**
 * One Redis connection per process. The offline queue is off and retries per request are bounded,
 * so a Redis outage shows up as fast errors the callers can degrade on (quota, idempotency)
 * instead of requests hanging; the client keeps reconnecting in the background.
 */
export function createRedis(url: string, logger: Logger): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    lazyConnect: false,
  });
  let reported = false;
  redis.on('error', (error) => {
    if (!reported) logger.warn({ err: error.message }, 'redis unavailable; retrying');
    reported = true;
  });
  redis.on('ready', () => {
    if (reported) logger.info('redis connection restored');
    reported = false;
  });
  return redis;
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
