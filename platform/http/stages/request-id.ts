import { newId } from '../../ids.js';
import { header } from '../http.js';
import type { Stage } from '../pipeline.js';

/**
 * What a caller's `X-Request-Id` may look like to be kept. Anything else (a JWT pasted there, a
 * log-injection attempt, a megabyte of text) is replaced by an id of ours: the value is written
 * into every log line of the request and echoed to the client.
 */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

export function acceptedRequestId(raw: string | undefined): string {
  return raw !== undefined && SAFE_REQUEST_ID.test(raw) ? raw : newId('request');
}

/** Names the request: the caller's id when it is safe, else a new one; echoed on every reply. */
export function requestId(): Stage {
  return async (exchange, next) => {
    exchange.requestId = acceptedRequestId(header(exchange.req, 'x-request-id'));
    exchange.replyHeaders['x-request-id'] = exchange.requestId;
    return next(exchange);
  };
}
