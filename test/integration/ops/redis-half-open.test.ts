import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { LINK_DEADLINE_MS, REDIS_LIVENESS } from '../../../platform/config/link-liveness.js';
import { createRedis, waitForRedis } from '../../../platform/redis.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { eventually } from '../../support/eventually.js';
import { realService } from '../../support/services.js';
import { startProxy, type Proxy } from '../../support/tcp-proxy.js';

/**
 * A Redis link that stays open but carries nothing (issue #34, item 1): the connection the client
 * holds is frozen while Redis itself answers anyone who connects again. Before the client watched
 * its link, every command kept timing out until the operating system gave up on the socket
 * (minutes); now the connection is replaced within LINK_DEADLINE_MS, with nothing restarted.
 */
const redisUrl = realService('REDIS_URL');

const REPLACED = 'redis stopped answering (half-open link); replacing the connection';

describe.runIf(redisUrl)('a half-open Redis link', () => {
  let proxy: Proxy | undefined;
  let redis: Redis | undefined;

  afterEach(async () => {
    redis?.disconnect();
    await proxy?.close();
  });

  async function connectThroughProxy() {
    proxy = await startProxy(new URL(redisUrl!));
    const log = capturedLogger();
    redis = createRedis(proxy.url, log.logger);
    await waitForRedis(redis);
    const key = `half-open:${randomUUID()}`;
    await redis.set(key, 'kept', 'EX', 120);
    return { proxy, redis, key, lines: log.lines };
  }

  it('is replaced while commands keep failing, and commands succeed again within the link deadline', async () => {
    const { proxy, redis, key, lines } = await connectThroughProxy();
    proxy.freezeExisting();
    const frozenAt = Date.now();
    // The link is half-open: a command is written and never answered.
    await expect(redis.get(key)).rejects.toThrow('Command timed out');
    await eventually(async () => expect(await redis.get(key)).toBe('kept'), 'a command answered after the freeze', {
      timeoutMs: LINK_DEADLINE_MS,
      intervalMs: 200,
    });
    const recoveredMs = Date.now() - frozenAt;
    const replaced = lines.filter((line) => line.msg === REPLACED);
    expect(replaced).toHaveLength(1);
    expect(replaced[0].unansweredPings).toBe(REDIS_LIVENESS.maxPingOut);
    console.log(`[figures] redis half-open, busy: commands answered again ${recoveredMs} ms after the freeze`);
    expect(recoveredMs).toBeLessThan(LINK_DEADLINE_MS);
  });

  it('is replaced while idle, so the next command after the freeze is answered', async () => {
    const { proxy, redis, key, lines } = await connectThroughProxy();
    let reconnected = 0;
    redis.on('ready', () => (reconnected += 1));
    proxy.freezeExisting();
    const frozenAt = Date.now();
    // Nothing is sent but the client's own PINGs: an idle link is watched too.
    await eventually(() => reconnected > 0, 'the idle frozen link replaced by a new connection', {
      timeoutMs: LINK_DEADLINE_MS,
      intervalMs: 100,
    });
    const replacedMs = Date.now() - frozenAt;
    expect(lines.filter((line) => line.msg === REPLACED)).toHaveLength(1);
    expect(await redis.get(key)).toBe('kept');
    console.log(`[figures] redis half-open, idle: connected anew ${replacedMs} ms after the freeze`);
    expect(replacedMs).toBeLessThan(LINK_DEADLINE_MS);
  });
});
