import { AppError } from '../../errors/errors.js';
import { acceptsRequestCoding } from '../compression.logic.js';
import { header, isJsonContentType, readJson } from '../http.js';
import { endpointOf, type Stage } from '../pipeline.js';

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Reads the JSON body of endpoints that take one, before anything else looks at the caller:
 * at most `maxBytes` (413 without buffering the rest), JSON media types only and no content coding
 * (415), nested at most
 * 64 levels (400). A declared non-JSON type is refused even when the body is empty.
 */
export function readBody(maxBytes: number): Stage {
  return async (exchange, next) => {
    if (!endpointOf(exchange).body || !METHODS_WITH_BODY.has(exchange.method)) return next(exchange);
    if (!acceptsRequestCoding(header(exchange.req, 'content-encoding'))) {
      // Compressed bytes would otherwise be parsed as JSON and answered 400 (RFC 9110 §15.5.16).
      throw new AppError('request.unsupported_content_encoding', 'Request bodies are read without a content coding', {
        headers: { 'accept-encoding': 'identity' },
      });
    }
    const type = header(exchange.req, 'content-type');
    if (type !== undefined && !isJsonContentType(type)) {
      throw new AppError('request.unsupported_media_type', 'Only JSON request bodies are accepted', {
        headers: exchange.method === 'PATCH' ? { 'accept-patch': 'application/json, application/merge-patch+json' } : {},
      });
    }
    exchange.body = await readJson(exchange.req, maxBytes);
    return next(exchange);
  };
}
