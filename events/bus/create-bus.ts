import type { PlatformConfig } from '../../platform/config/config.js';
import type { Logger } from '../../platform/observability/logger.js';
import { STARTUP_RETRY } from '../../platform/config/link-liveness.js';
import { reachDependencyRetrying } from '../../platform/reach-dependency.js';
import type { EventBus } from './event-bus.js';
import { createInProcessBus } from './in-process-bus.js';
import { connectJetStreamBus } from './jetstream-bus.js';

/** JetStream when NATS_URL is set, otherwise the in-process bus (design §2, embedded mode). */
export async function createEventBus(config: Pick<PlatformConfig, 'natsUrl'>, logger: Logger): Promise<EventBus> {
  if (config.natsUrl) return connectNats(config.natsUrl, logger);
  logger.info('no NATS_URL: events use the in-process bus');
  return createInProcessBus();
}

/**
 * JetStream at NATS_URL. At start-up the cluster may be electing a leader or one of its servers
 * may be down: the whole list is tried again (connection and JetStream API) for
 * STARTUP_RETRY.natsMs (platform/config/link-liveness.ts); only then is it an error naming the
 * variable.
 */
export function connectNats(url: string, logger: Logger, retryForMs: number = STARTUP_RETRY.natsMs): Promise<EventBus> {
  return reachDependencyRetrying('NATS_URL', url, () => connectJetStreamBus(url, { logger }), {
    retryForMs,
    firstDelayMs: STARTUP_RETRY.firstDelayMs,
    maxDelayMs: STARTUP_RETRY.maxDelayMs,
    logger,
    service: 'NATS',
    discardLate: (bus) => (bus as EventBus).close(),
  });
}
