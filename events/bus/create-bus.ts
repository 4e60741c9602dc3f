import type { PlatformConfig } from '../../platform/config/config.js';
import type { Logger } from '../../platform/logger.js';
import { reachDependency } from '../../platform/reach-dependency.js';
import type { EventBus } from './event-bus.js';
import { createInProcessBus } from './in-process-bus.js';
import { connectJetStreamBus } from './jetstream-bus.js';

/** JetStream when NATS_URL is set, otherwise the in-process bus (design §2, embedded mode). */
export async function createEventBus(config: Pick<PlatformConfig, 'natsUrl'>, logger: Logger): Promise<EventBus> {
  if (config.natsUrl) return connectNats(config.natsUrl, logger);
  logger.info('no NATS_URL: events use the in-process bus');
  return createInProcessBus();
}

/** JetStream at NATS_URL; a server that cannot be reached at start-up is an error naming the variable. */
export function connectNats(url: string, logger: Logger): Promise<EventBus> {
  return reachDependency('NATS_URL', url, () => connectJetStreamBus(url, { logger }));
}
