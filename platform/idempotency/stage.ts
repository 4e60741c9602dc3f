import { header } from '../http/http.js';
import { errorReply } from '../http/stages/error-replies.js';
import { endpointOf, type Reply, type Stage } from '../http/pipeline.js';
import { isAppError } from '../errors/errors.js';
import type { Logger } from '../observability/logger.js';
import { runIdempotent } from './guard.js';
import { isStorableStatus, parseIdempotencyKey, type StoredResponse } from './idempotency.logic.js';
import type { IdempotencyStore } from './store.js';

/**
 * The first half of the spec's Idempotency-Key rule, before the request is validated: a keyed write
 * the endpoint declares (REST POST/PUT/PATCH, GraphQL mutations) needs a key, and the key is a ULID
 * (400 `idempotency.key_required` / `idempotency.key_invalid`).
 */
export function idempotencyKey(): Stage {
  return async (exchange, next) => {
    const write = endpointOf(exchange).keyedWrite?.(exchange);
    if (write) {
      exchange.keyed = { write, key: parseIdempotencyKey(header(exchange.req, 'idempotency-key'), write.requiredOn) };
      exchange.idempotencyChecked = true;
    }
    return next(exchange);
  };
}

/**
 * The second half, once the request is valid: a repeat of a completed request replays its stored
 * reply (`Idempotent-Replayed: true`); the same key with another request is 422, one still running
 * 409. Problems the handler raises are rendered here, so the final ones (404, 409, 412, 422) are
 * stored like any answer; others free the key.
 */
export function idempotency(store: IdempotencyStore, logger: Logger): Stage {
  return async (exchange, next) => {
    if (!exchange.keyed) return next(exchange);
    const { write: keyed, key } = exchange.keyed;
    const { principal } = exchange;
    if (!principal) throw new Error('idempotency() must come after authenticate()');
    const format = endpointOf(exchange).errors;
    const execute = async (): Promise<StoredResponse> => {
      try {
        return stored(await next(exchange));
      } catch (error) {
        if (isAppError(error)) return stored(errorReply(error, format, undefined, exchange.req.headers.accept));
        throw error;
      }
    };
    const storable = keyed.storable ?? ((answer: StoredResponse) => isStorableStatus(answer.status));
    const result = await runIdempotent(
      store,
      {
        scope: { tenantId: principal.tenantId, subject: principal.subject, route: keyed.route },
        key,
        fingerprint: keyed.fingerprint,
      },
      execute,
      logger,
      { storable },
    );
    const headers = result.replayed ? { ...result.response.headers, 'idempotent-replayed': 'true' } : result.response.headers;
    return { status: result.response.status, headers, body: result.response.body };
  };
}

function stored(answer: Reply): StoredResponse {
  return { status: answer.status, headers: answer.headers, body: answer.body.toString() };
}
