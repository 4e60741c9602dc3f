import { AppError } from '../../errors/errors.js';
import type { CorsOrigins } from '../../config/cors-origins.js';
import { errorReply } from './error-replies.js';
import { header } from '../http.js';
import { reply, type Reply, type Stage } from '../pipeline.js';

export { SANDBOX_ORIGINS, type CorsOrigins } from '../../config/cors-origins.js';

/** Request headers this API reads, plus those Apollo's clients and Sandbox send with every operation. */
export const CORS_REQUEST_HEADERS = [
  'authorization',
  'x-tenant-id',
  'idempotency-key',
  'if-match',
  'if-none-match',
  'traceparent',
  'tracestate',
  'accept-language',
  'content-type',
  'accept',
  'x-request-id',
  'apollographql-client-name',
  'apollographql-client-version',
  'apollo-require-preflight',
  'x-apollo-operation-name',
] as const;

/** Response headers a browser page may read (all others are hidden from its scripts). */
export const CORS_EXPOSED_HEADERS = [
  'etag',
  'idempotent-replayed',
  'traceparent',
  'retry-after',
  'location',
  'content-language',
  'x-request-id',
  'www-authenticate',
  'accept-patch',
] as const;

const METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';
/** How long a browser may reuse a preflight answer. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

export function isAllowedOrigin(origins: CorsOrigins, origin: string): boolean {
  return origins === '*' || origins.includes(origin);
}

/**
 * CORS for browser pages on other origins. A preflight (`OPTIONS` with `Access-Control-Request-Method`)
 * is answered here, 204 for an allowed origin and 403 `cors.origin_not_allowed` otherwise; any other
 * request goes on, and its reply (errors included) carries `Access-Control-Allow-Origin` when the
 * origin is allowed. No cookies are used, so credentials are never allowed: `*` stays safe.
 */
export function cors(origins: CorsOrigins): Stage {
  return async (exchange, next) => {
    const origin = header(exchange.req, 'origin');
    if (origin === undefined) return next(exchange);
    const allowed = isAllowedOrigin(origins, origin);
    const allowOrigin = origins === '*' ? '*' : origin;
    if (exchange.method === 'OPTIONS' && header(exchange.req, 'access-control-request-method') !== undefined) {
      if (!allowed) {
        const refused = new AppError('cors.origin_not_allowed', `The origin ${origin} may not call this API (CORS_ORIGINS)`, {
          status: 403,
        });
        return errorReply(refused, 'problem');
      }
      return reply(204, '', {
        'access-control-allow-origin': allowOrigin,
        'access-control-allow-methods': METHODS,
        'access-control-allow-headers': CORS_REQUEST_HEADERS.join(', '),
        'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
        vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
      });
    }
    const answer: Reply = await next(exchange);
    if (!allowed) return answer;
    return {
      ...answer,
      headers: {
        ...answer.headers,
        'access-control-allow-origin': allowOrigin,
        'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', '),
        vary: answer.headers.vary ? `${answer.headers.vary}, Origin` : 'Origin',
      },
    };
  };
}
