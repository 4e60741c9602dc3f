import type { Logger } from '../../platform/observability/logger.js';
import { eventTags, type CatalogEventFacts } from './cache-policy.logic.js';
import type { ResponseCache } from './response-cache.js';

/**
 * Where a gateway replica hears of the catalog's published events: every event's body from the
 * moment it follows, a call of `onLost` when nothing can be heard (a dropped or half-open link), and
 * a call of `onGap` whenever some may have been missed (the link is back). Built by processes/
 * on the event bus of the process (gateway/ imports no events code): JetStream at NATS_URL, or the
 * in-process bus of `npm start` without it, through the same port (processes/parts.ts).
 */
export interface CatalogEventFeed {
  /** Starts following; resolves to the function that stops. */
  follow(
    onEvent: (body: Uint8Array, heard: HeardEvent) => void,
    onGap: () => void,
    onLost: () => void,
  ): Promise<() => Promise<void>>;
}

/** What the bus says of an event besides its body. */
export interface HeardEvent {
  /** When the transaction that wrote the event committed (epoch ms), when the relay knew it. */
  committedAtMs?: number;
}

export interface CatalogEventFollower {
  close(): Promise<void>;
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
 * A lost feed stops the cache after its grace; after a gap L1 is cleared and every Redis entry
 * dropped (docs/operations.md, "Response cache").
 */
export async function followCatalogEvents(
  feed: CatalogEventFeed,
  cache: ResponseCache,
  logger: Logger,
  onInvalidated?: (tags: string[]) => void,
): Promise<CatalogEventFollower> {
  const stop = await feed.follow(
    (body, heard) => {
      const facts = readFacts(body);
      const tags = eventTags(facts);
      cache.invalidate(tags, 'event', { occurredAt: facts.occurredAt, committedAtMs: heard.committedAtMs }).then(
        () => onInvalidated?.(tags),
        (err: unknown) => logger.warn({ err }, 'response cache: invalidation from a catalog event failed'),
      );
    },
    () =>
      cache
        .feedBack()
        .catch((err: unknown) => logger.warn({ err }, 'response cache: dropping the cache Redis after a gap failed')),
    () => cache.feedLost(),
  );
  return { close: stop };
}
