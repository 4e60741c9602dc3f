import type { Config } from '../../platform/config/config.js';
import type { Logger } from '../../platform/logger.js';
import type { EventBus } from './event-bus.js';
import { createInProcessBus } from './in-process-bus.js';
import { connectJetStreamBus } from './jetstream-bus.js';

/** JetStream when NATS_URL is set, otherwise the in-process bus (design §2, embedded mode). */
export async function createEventBus(config: Pick<Config, 'natsUrl'>, logger: Logger): Promise<EventBus> {
  if (config.natsUrl) return connectJetStreamBus(config.natsUrl, { logger });
  logger.info('no NATS_URL: events use the in-process bus');
  return createInProcessBus();
}
