import { connect, type NatsConnection } from '@nats-io/transport-node';
import { natsServers } from '../../platform/config/config.js';
import type { Logger } from '../../platform/logger.js';
import { eventTags, type CatalogEventFacts } from './cache-policy.logic.js';
import type { ResponseCache } from './response-cache.js';

/** The subjects the catalog publishes its events on (the CATALOG stream's, events/streams.ts). */
export const CATALOG_SUBJECTS = 'catalog.>';

export interface CatalogEventFollower {
  close(): Promise<void>;
}

/**
 * Every gateway replica follows the catalog's published events and drops what each one changed.
 * A plain NATS subscription, not a JetStream consumer: every replica must see every event (a
 * durable consumer shared by replicas would hand each event to one of them), nothing has to be
 * acknowledged or replayed, and it leaves no consumer state on the server when a replica dies.
 * A JetStream publish reaches core subscribers of its subject like any other message.
 * Events missed while the connection was down are not replayed: on reconnecting, this replica's
 * L1 is cleared, and Redis entries they concerned live until another replica's event, a mutation
 * or their TTL drops them (docs/operations.md, "Response cache").
 */
export async function followCatalogEvents(
  natsUrl: string,
  cache: ResponseCache,
  logger: Logger,
  onInvalidated?: (tags: string[]) => void,
): Promise<CatalogEventFollower> {
  const nc: NatsConnection = await connect({
    servers: natsServers(natsUrl),
    name: 'gateway-response-cache',
    maxReconnectAttempts: -1,
    noAsyncTraces: true,
  });
  nc.subscribe(CATALOG_SUBJECTS, {
    callback: (error, message) => {
      if (error) {
        logger.warn({ err: error }, 'response cache: catalog event subscription failed');
        return;
      }
      let facts: CatalogEventFacts = {};
      try {
        facts = message.json<CatalogEventFacts>();
      } catch {
        // Tolerant reader: an event it cannot read drops everything (eventTags of no tenant).
      }
      const tags = eventTags(facts);
      cache.invalidate(tags, 'event', { occurredAt: facts.occurredAt }).then(
        () => onInvalidated?.(tags),
        (err: unknown) => logger.warn({ err }, 'response cache: invalidation from a catalog event failed'),
      );
    },
  });
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'reconnect') cache.clearLocal();
    }
  })();
  return {
    close: async () => {
      await nc.drain();
    },
  };
}
