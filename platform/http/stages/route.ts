import { AppError } from '../../errors/errors.js';
import type { EndpointTable, Stage } from '../pipeline.js';

/**
 * Picks the endpoint that answers the request from the tables, asked in order: the first that
 * knows the path decides. A known path with another method is 405 with `Allow`; an unknown one 404.
 */
export function route(tables: readonly EndpointTable[]): Stage {
  return async (exchange, next) => {
    for (const table of tables) {
      const resolution = table.resolve(exchange);
      if (resolution.kind === 'not_found') continue;
      if (resolution.kind === 'method_not_allowed') {
        const allow = resolution.allow.join(', ');
        throw new AppError('request.method_not_allowed', `${exchange.method} is not supported on ${exchange.url.pathname}`, {
          headers: { allow },
        });
      }
      exchange.endpoint = resolution.endpoint;
      exchange.params = resolution.params;
      return next(exchange);
    }
    throw new AppError('request.not_found', `No route ${exchange.method} ${exchange.url.pathname}`);
  };
}
