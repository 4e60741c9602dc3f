import type { IncomingMessage, ServerResponse } from 'node:http';
import { HeaderMap, type ApolloServer, type BaseContext } from '@apollo/server';

/**
 * Runs an Apollo Server request from a plain node:http request, so the gateway, the subgraphs
 * and the REST layer share one tiny HTTP stack with our own limits and headers (no Express).
 */
export async function executeGraphQL<TContext extends BaseContext>(
  server: ApolloServer<TContext>,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  context: () => Promise<TContext>,
  extraHeaders: Record<string, string> = {},
): Promise<void> {
  const headers = new HeaderMap();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
  }
  const url = new URL(req.url ?? '/', 'http://localhost');
  const response = await server.executeHTTPGraphQLRequest({
    httpGraphQLRequest: { method: (req.method ?? 'GET').toUpperCase(), headers, search: url.search, body },
    context,
  });
  const outHeaders: Record<string, string> = { ...extraHeaders };
  for (const [key, value] of response.headers) outHeaders[key] = value;
  if (response.body.kind === 'complete') {
    res.writeHead(response.status ?? 200, { ...outHeaders, 'content-length': Buffer.byteLength(response.body.string) });
    res.end(response.body.string);
    return;
  }
  res.writeHead(response.status ?? 200, outHeaders);
  for await (const chunk of response.body.asyncIterator) res.write(chunk);
  res.end();
}
