import { connect } from '@nats-io/transport-node';
import { natsServers } from '../../platform/config/config.js';
import type { Logger } from '../../platform/logger.js';
import { eventTags, type CatalogEventFacts } from './cache-policy.logic.js';
import type { ResponseCache } from './response-cache.js';

/** The subjects the catalog publishes its events on (the CATALOG stream's, events/streams.ts). */
export const CATALOG_SUBJECTS = 'catalog.>';

/**
 * Where a gateway replica hears of the catalog's published events: every event's body from the
 * moment it follows, and a call of `onGap` whenever some may have been missed. The gateway process
 * follows NATS (natsCatalogFeed); the one-process system without NATS follows its in-process bus
 * (processes/ builds that feed, since gateway/ imports no events code).
 */
export interface CatalogEventFeed {
  /** Starts following; resolves to the function that stops. */
  follow(onEvent: (body: Uint8Array) => void, onGap: () => void): Promise<() => Promise<void>>;
}

export interface CatalogEventFollower {
  close(): Promise<void>;
}

/**
 * The catalog's events as a plain NATS subscription, not a JetStream consumer: every replica must
 * see every event (a durable consumer shared by replicas would hand each event to one of them),
 * nothing has to be acknowledged or replayed, and it leaves no consumer state on the server when a
 * replica dies. A JetStream publish reaches core subscribers of its subject like any other message.
 * Events published while the connection was down are not replayed: a reconnect is a gap.
 */
export function natsCatalogFeed(natsUrl: string, logger: Logger): CatalogEventFeed {
  return {
    async follow(onEvent, onGap) {
      const nc = await connect({
        servers: natsServers(natsUrl),
        name: 'gateway-response-cache',
        maxReconnectAttempts: -1,
        noAsyncTraces: true,
      });
      nc.subscribe(CATALOG_SUBJECTS, {
        callback: (error, message) => {
          if (error) logger.warn({ err: error }, 'response cache: catalog event subscription failed');
          else onEvent(message.data);
        },
      });
      void (async () => {
        for await (const status of nc.status()) if (status.type === 'reconnect') onGap();
      })();
      return () => nc.drain();
    },
  };
}

/** What an event body says about what it changed; an unreadable body names no tenant (drops everything). */
function readFacts(body: Uint8Array): CatalogEventFacts {
  try {
    return JSON.parse(Buffer.from(body).toString('utf8')) as CatalogEventFacts;
  } catch {
    return {};
  }
}

/**
 * Every gateway replica follows the catalog's published events and drops what each one changed.
 * After a gap this replica's L1 is cleared; Redis entries the missed events concerned live until
 * another replica's event, a mutation or their TTL drops them (docs/operations.md, "Response cache").
 */
export async function followCatalogEvents(
  feed: CatalogEventFeed,
  cache: ResponseCache,
  logger: Logger,
  onInvalidated?: (tags: string[]) => void,
): Promise<CatalogEventFollower> {
  const stop = await feed.follow(
    (body) => {
      const facts = readFacts(body);
      const tags = eventTags(facts);
      cache.invalidate(tags, 'event', { occurredAt: facts.occurredAt }).then(
        () => onInvalidated?.(tags),
        (err: unknown) => logger.warn({ err }, 'response cache: invalidation from a catalog event failed'),
      );
    },
    () => cache.clearLocal(),
  );
  return { close: stop };
}
