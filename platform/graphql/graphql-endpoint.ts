import { HeaderMap, type ApolloServer, type BaseContext } from '@apollo/server';
import Negotiator from 'negotiator';
import { unauthenticated } from '../errors.js';
import type { Endpoint, EndpointTable, Exchange, KeyedWrite, Reply } from '../http/pipeline.js';

export const GRAPHQL_PATH = '/graphql';

export interface GraphQLEndpointOptions<TContext extends BaseContext> {
  apollo: ApolloServer<TContext>;
  /** The per-request context of an authenticated request. */
  context(exchange: Exchange): Promise<TContext>;
  methods: ReadonlyArray<'GET' | 'POST'>;
  /** Serves Apollo's landing page (Sandbox) to a browser's GET without authentication. */
  landingPage?: boolean;
  /** Declares a mutation a keyed write (the gateway's Idempotency-Key rule). */
  keyedWrite?(exchange: Exchange): KeyedWrite | undefined;
}

/**
 * `/graphql` as an endpoint of the pipeline: Apollo Server executes what the stages before it let
 * through (authenticated, body read and limited), and its answer becomes the reply. A browser
 * asking for HTML gets the landing page, which is public; every operation it sends is not.
 */
export function graphqlEndpoints<TContext extends BaseContext>(options: GraphQLEndpointOptions<TContext>): EndpointTable {
  const { apollo } = options;
  const operations: Endpoint = {
    route: GRAPHQL_PATH,
    access: 'tenant',
    body: true,
    errors: 'graphql',
    keyedWrite: options.keyedWrite,
    handle: (exchange) => executeHttp(apollo, exchange, () => options.context(exchange)),
  };
  const landing: Endpoint = {
    route: GRAPHQL_PATH,
    access: 'public',
    errors: 'graphql',
    handle: (exchange) =>
      executeHttp(apollo, exchange, async () => {
        throw unauthenticated();
      }),
  };
  const methods: readonly string[] = options.methods;
  return {
    resolve(exchange) {
      if (exchange.url.pathname !== GRAPHQL_PATH) return { kind: 'not_found' };
      if (!methods.includes(exchange.method)) return { kind: 'method_not_allowed', allow: [...methods] };
      const endpoint = options.landingPage && prefersHtml(exchange) ? landing : operations;
      return { kind: 'found', endpoint, params: {} };
    },
  };
}

/**
 * The choice Apollo Server makes before it serves its landing page (same media types, same
 * negotiation), so a request routed to the public page is always answered by the page.
 */
function prefersHtml(exchange: Exchange): boolean {
  const accept = exchange.req.headers.accept;
  if (exchange.method !== 'GET' || !accept) return false;
  const preferred = new Negotiator({ headers: { accept } }).mediaType([
    'application/json; charset=utf-8',
    'application/graphql-response+json; charset=utf-8',
    'multipart/mixed; deferSpec=20220824',
    'multipart/mixed; incrementalSpec=v0.2',
    'multipart/mixed',
    'text/html',
  ]);
  return preferred === 'text/html';
}

async function executeHttp<TContext extends BaseContext>(
  apollo: ApolloServer<TContext>,
  exchange: Exchange,
  context: () => Promise<TContext>,
): Promise<Reply> {
  const headers = new HeaderMap();
  for (const [key, value] of Object.entries(exchange.req.headers)) {
    if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
  }
  const response = await apollo.executeHTTPGraphQLRequest({
    httpGraphQLRequest: { method: exchange.method, headers, search: exchange.url.search, body: exchange.body },
    context,
  });
  const replyHeaders: Record<string, string> = {};
  for (const [key, value] of response.headers) replyHeaders[key] = value;
  let body = '';
  if (response.body.kind === 'complete') body = response.body.string;
  else for await (const chunk of response.body.asyncIterator) body += chunk;
  return { status: response.status ?? 200, headers: replyHeaders, body };
}
