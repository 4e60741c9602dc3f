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
  const response = await server.executeHTTPGraphQLRequest({ httpGraphQLRequest: httpGraphQLRequest(req, body), context });
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

function httpGraphQLRequest(req: IncomingMessage, body: unknown) {
  const headers = new HeaderMap();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
  }
  const url = new URL(req.url ?? '/', 'http://localhost');
  return { method: (req.method ?? 'GET').toUpperCase(), headers, search: url.search, body };
}

/** Like executeGraphQL, but returns the whole response instead of writing it (to store it for replay). */
export async function captureGraphQL<TContext extends BaseContext>(
  server: ApolloServer<TContext>,
  req: IncomingMessage,
  body: unknown,
  context: () => Promise<TContext>,
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const response = await server.executeHTTPGraphQLRequest({ httpGraphQLRequest: httpGraphQLRequest(req, body), context });
  const headers: Record<string, string> = {};
  for (const [key, value] of response.headers) headers[key] = value;
  let text = '';
  if (response.body.kind === 'complete') text = response.body.string;
  else for await (const chunk of response.body.asyncIterator) text += chunk;
  return { status: response.status ?? 200, headers, body: text };
}
