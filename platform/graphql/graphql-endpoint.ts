import { HeaderMap, type ApolloServer, type BaseContext } from '@apollo/server';
import Negotiator from 'negotiator';
import { unauthenticated } from '../errors/errors.js';
import type { Endpoint, EndpointTable, Exchange, KeyedWrite, Reply } from '../http/pipeline.js';

export const GRAPHQL_PATH = '/graphql';

export interface GraphQLEndpointOptions<TContext extends BaseContext> {
  apollo: ApolloServer<TContext>;
  /** The per-request context of an authenticated request. */
  context(exchange: Exchange): Promise<TContext>;
  methods: ReadonlyArray<'GET' | 'POST'>;
  /** Serves Apollo's landing page (Sandbox) to a browser's GET without authentication. */
  landingPage?: boolean;
  /**
   * A page of this server the landing page links to, for networks where Apollo's CDN (which
   * Sandbox loads from) is blocked: hospital networks often block it (issue #26).
   */
  offlineExplorer?: { href: string; label: string };
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
    handle: async (exchange) => {
      const page = await executeHttp(apollo, exchange, async () => {
        throw unauthenticated();
      });
      return options.offlineExplorer ? withOfflineExplorer(page, options.offlineExplorer) : page;
    },
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

/**
 * The landing page with a link, always visible in a corner, to an explorer served by this server:
 * plain HTML, so it shows whether or not Sandbox's script could be loaded. The page's CSP admits
 * styles by nonce only, so the link's style carries the page's own nonce.
 */
function withOfflineExplorer(page: Reply, explorer: { href: string; label: string }): Reply {
  const html = String(page.body);
  if (!page.headers['content-type']?.includes('text/html') || !html.includes('</body>')) return page;
  const nonce = /<style nonce=["']?([\w+/=-]+)/.exec(html)?.[1];
  const style =
    '#offline-explorer{position:fixed;bottom:8px;right:12px;margin:0;padding:4px 8px;z-index:2147483647;' +
    'font:13px system-ui,sans-serif;background:#fff;border-radius:4px;box-shadow:0 1px 3px rgba(0,0,0,.3)}';
  const link =
    `<style${nonce ? ` nonce="${nonce}"` : ''}>${style}</style>` +
    `<p id="offline-explorer">Sandbox loads from Apollo's CDN. Blocked? <a href="${explorer.href}">${explorer.label}</a></p>`;
  return { ...page, body: html.replace('</body>', `${link}</body>`) };
}
