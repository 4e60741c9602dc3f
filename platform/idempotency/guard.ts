import { AppError, dependencyUnavailable } from '../errors.js';
import type { Logger } from '../logger.js';
import {
  isStorableStatus,
  replayableHeaders,
  scopedKey,
  type IdempotencyScope,
  type StoredResponse,
} from './idempotency.logic.js';
import type { IdempotencyStore } from './store.js';

export interface IdempotentResult {
  response: StoredResponse;
  replayed: boolean;
}

/**
 * Runs a write at most once per key. A replay returns the stored status, headers and body; a
 * different request under the key is 422, a request still running under it is 409. Thrown errors
 * and non-storable outcomes free the key, so nothing half-done is ever replayed.
 */
export async function runIdempotent(
  store: IdempotencyStore,
  request: { scope: IdempotencyScope; key: string; fingerprint: string },
  execute: () => Promise<StoredResponse>,
  logger: Logger,
  storable: (response: StoredResponse) => boolean = (response) => isStorableStatus(response.status),
): Promise<IdempotentResult> {
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
      headers: { 'retry-after': '1' },
    });
  }
  const { lease } = outcome;
  let response: StoredResponse;
  try {
    response = await execute();
  } catch (error) {
    await store.release(lease).catch((releaseError) => logger.error({ err: releaseError }, 'idempotency release failed'));
    throw error;
  }
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
