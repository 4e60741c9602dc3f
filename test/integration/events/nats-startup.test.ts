import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectNats } from '../../../events/bus/create-bus.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { STARTUP_RETRY } from '../../../platform/config/link-liveness.js';
import type { Logger } from '../../../platform/observability/logger.js';
import { DependencyUnreachableError } from '../../../platform/reach-dependency.js';
import { eventually } from '../../support/eventually.js';
import { privateServicesAvailable, startPrivateNats, type PrivateNats } from '../../support/private-services.js';

/**
 * Start-up while no listed NATS server answers yet (a cluster electing its leader, a node being
 * replaced): the part keeps trying the whole NATS_URL list for a bounded, documented time
 * (STARTUP_RETRY.natsMs) instead of exiting at the first refusal (issue #34: a worker started 2 s
 * after a node was killed exited 1, "cannot reach" all three URLs, although two were up).
 */
describe.runIf(privateServicesAvailable('NATS start-up', ['nats-server']))('NATS at start-up', () => {
  let nats: PrivateNats;
  let bus: EventBus | undefined;

  beforeAll(async () => {
    nats = await startPrivateNats();
  });
  afterAll(async () => {
    await bus?.close();
    await nats?.destroy();
  });

  function recordingLogger() {
    const warnings: string[] = [];
    const logger = { warn: (_fields: unknown, msg: string) => warnings.push(msg), info: () => undefined } as unknown as Logger;
    return { logger, warnings };
  }

  it('keeps trying the listed servers until one answers, within the documented bound', async () => {
    expect(STARTUP_RETRY.natsMs).toBeGreaterThanOrEqual(15_000);
    await nats.stop('SIGKILL');
    const { logger, warnings } = recordingLogger();
    // A dead server first, then one that comes back while the part waits.
    const connecting = connectNats(`nats://127.0.0.1:1,${nats.url}`, logger);
    const outcome = connecting.then(
      () => 'connected',
      (error: Error) => error.message,
    );
    await eventually(() => warnings.length >= 1, 'a failed attempt to be logged and retried');
    await nats.start();
    bus = await connecting;
    expect(await outcome).toBe('connected');
    expect(bus.kind).toBe('jetstream');
    // Progress lines do not name the variable: the one line that does is the final error (startup-errors.test.ts).
    expect(warnings[0]).toBe('NATS not reachable yet; trying again');
  });

  it('gives up after its bound with one line naming the variable, the servers and how long it tried', async () => {
    const { logger, warnings } = recordingLogger();
    const error = await connectNats('nats://127.0.0.1:1,nats://127.0.0.1:2', logger, 1_500).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DependencyUnreachableError);
    expect((error as Error).message).toMatch(
      /^NATS_URL: cannot reach nats:\/\/127\.0\.0\.1:1,nats:\/\/127\.0\.0\.1:2 \(.*; tried \d+ times in \d+ s\)$/,
    );
    expect(warnings.length).toBeGreaterThanOrEqual(2);
  });
});
