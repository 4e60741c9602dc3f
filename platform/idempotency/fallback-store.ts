import type { Logger } from '../observability/logger.js';
import type { BeginOutcome, IdempotencyStore, Lease } from './store.js';

/**
 * Redis first, the database table while Redis cannot answer: keyed writes keep working through a
 * Redis outage instead of all answering 503 (issue #24: "ready while every write fails").
 *
 * Why this keeps one effect per key: a key begun in Redis before the outage and retried during it
 * starts again in the table, but both runs reach the same keyed mutation, whose effect record
 * (platform/idempotency/effect-store.ts) lets only one of them write and gives the other the
 * winner's result. Settling goes to the store that granted the lease.
 */
export function withDatabaseFallback(
  primary: IdempotencyStore,
  fallback: IdempotencyStore,
  options: { primaryReady: () => boolean; logger: Logger },
): IdempotencyStore & { usingFallback(): boolean } {
  const holders = new WeakMap<Lease, IdempotencyStore>();
  let fallingBack = false;
  const note = (now: boolean, error?: unknown) => {
    if (now === fallingBack) return;
    fallingBack = now;
    if (now)
      options.logger.warn({ err: (error as Error | undefined)?.message }, 'idempotency records fall back to the database table');
    else options.logger.info('idempotency records are back in redis');
  };
  const remember = (store: IdempotencyStore, outcome: BeginOutcome): BeginOutcome => {
    if (outcome.kind === 'started') holders.set(outcome.lease, store);
    return outcome;
  };
  const holderOf = (lease: Lease) => holders.get(lease) ?? primary;
  return {
    kind: primary.kind,
    leaseMs: primary.leaseMs,
    usingFallback: () => fallingBack,
    async begin(key, fingerprint) {
      if (options.primaryReady()) {
        try {
          const outcome = remember(primary, await primary.begin(key, fingerprint));
          note(false);
          return outcome;
        } catch (error) {
          note(true, error);
        }
      } else {
        note(true, new Error('redis connection not ready'));
      }
      return remember(fallback, await fallback.begin(key, fingerprint));
    },
    complete: (lease, response) => holderOf(lease).complete(lease, response),
    release: (lease) => holderOf(lease).release(lease),
    renew: (lease) => holderOf(lease).renew(lease),
  };
}
