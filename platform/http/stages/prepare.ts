import { endpointOf, type Stage } from '../pipeline.js';

/** Lets the endpoint validate the request before anything is stored under its Idempotency-Key. */
export function prepare(): Stage {
  return async (exchange, next) => {
    const endpoint = endpointOf(exchange);
    if (endpoint.prepare) exchange.input = await endpoint.prepare(exchange);
    return next(exchange);
  };
}
