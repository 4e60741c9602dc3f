import { AppError, dependencyUnavailable } from '../errors/errors.js';
import type { Logger } from '../observability/logger.js';
import {
  isStorableStatus,
  replayableHeaders,
  retryAfterSeconds,
  scopedKey,
  type IdempotencyScope,
  type StoredResponse,
} from './idempotency.logic.js';
import { intervalHeartbeat, renewEveryMs, type Heartbeat } from './lease-heartbeat.js';
import type { IdempotencyStore, Lease } from './store.js';

export interface IdempotentResult {
  response: StoredResponse;
  replayed: boolean;
}

export interface RunOptions {
  /** Which outcomes are kept for replay; by default 2xx and the final 4xx. */
  storable?: (response: StoredResponse) => boolean;
  /** What renews the lease while the request runs; by default a timer, three beats per lease. */
  heartbeat?: Heartbeat;
}

/**
 * Runs a write at most once per key. A replay returns the stored status, headers and body; a
 * different request under the key is 422, a request still running under it is 409 with a
 * Retry-After of what is left of its lease. Thrown errors and non-storable outcomes free the key, so
 * nothing half-done is ever replayed.
 *
 * The lease is short and renewed while `execute` runs, so a key follows its holder: a gateway that
 * dies mid-request stops renewing and a retry may take the key over within one lease. If the dead
 * holder's write had reached a subgraph, the retry finds its recorded effect there
 * (platform/idempotency/effect-store.ts) instead of running it again.
 */
export async function runIdempotent(
  store: IdempotencyStore,
  request: { scope: IdempotencyScope; key: string; fingerprint: string },
  execute: () => Promise<StoredResponse>,
  logger: Logger,
  options: RunOptions = {},
): Promise<IdempotentResult> {
  const storable = options.storable ?? ((response: StoredResponse) => isStorableStatus(response.status));
  const key = scopedKey(request.scope, request.key);
  let outcome;
  try {
    outcome = await store.begin(key, request.fingerprint);
  } catch (error) {
    // Without the store a retry could run twice: refuse rather than guess.
    logger.error({ err: error }, 'idempotency store unavailable');
    throw dependencyUnavailable('the idempotency store');
  }
  if (outcome.kind === 'replay') return { response: outcome.response, replayed: true };
  if (outcome.kind === 'mismatch') {
    throw new AppError('idempotency.key_reused', 'This Idempotency-Key was already used for a different request');
  }
  if (outcome.kind === 'in_flight') {
    throw new AppError('idempotency.in_flight', 'A request with this Idempotency-Key is still being processed', {
      headers: { 'retry-after': String(retryAfterSeconds(outcome.retryAfterMs)) },
    });
  }
  const { lease } = outcome;
  const stopRenewing = keepLease(store, lease, options.heartbeat ?? intervalHeartbeat(renewEveryMs(store.leaseMs)), logger);
  let response: StoredResponse;
  try {
    response = await execute();
  } catch (error) {
    stopRenewing();
    await store.release(lease).catch((releaseError) => logger.error({ err: releaseError }, 'idempotency release failed'));
    throw error;
  }
  stopRenewing();
  const kept = { ...response, headers: replayableHeaders(response.headers) };
  try {
    const done = storable(response) ? await store.complete(lease, kept) : await store.release(lease);
    if (!done) logger.warn({ route: request.scope.route }, 'idempotency lease expired before the request finished');
  } catch (error) {
    // The effect happened; the caller gets its answer even if the record could not be written.
    logger.error({ err: error }, 'idempotency record could not be written');
  }
  return { response, replayed: false };
}

/** Renews the lease on every beat until stopped; a lost lease is logged once and no longer renewed. */
function keepLease(store: IdempotencyStore, lease: Lease, heartbeat: Heartbeat, logger: Logger): () => void {
  let lost = false;
  return heartbeat(async () => {
    if (lost) return;
    try {
      lost = !(await store.renew(lease));
      if (lost) logger.warn('idempotency lease lost while the request ran (expired and taken over, or settled)');
    } catch (error) {
      // The next beat tries again; the lease outlives two missed beats.
      logger.warn({ err: (error as Error).message }, 'idempotency lease renewal failed');
    }
  });
}
