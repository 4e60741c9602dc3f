import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What a subgraph address may answer in production besides the subgraph itself: the subgraph's
 * own answer (forwarded to a real one), a load balancer's error pages, a body that is not GraphQL
 * (a proxy's maintenance page with 200), or nothing at all (a frozen process).
 */
export type ReplicaMode = 'forward' | 'draining' | 'html-502' | 'html-503' | 'html-200' | 'json-200' | 'hang' | 'graphql';

/** HAProxy's and nginx's own pages: what the gateway must never hand a client. */
export const BALANCER_PAGES = {
  502: '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx/1.22.1</center></body></html>',
  503: '<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request (haproxy backend subgraph-replicas).\n</body></html>',
  200: '<html><body><h1>Maintenance</h1><p>haproxy maintenance page</p></body></html>',
} as const;

export interface FakeReplica {
  /** The GraphQL URL the gateway is given. */
  url: string;
  port: number;
  mode: ReplicaMode;
  /** What the replica answers (200, JSON) in `graphql` mode: a subgraph's answer as the test writes it. */
  graphqlAnswer: unknown;
  /** Requests that reached this address, by kind (a mutation is a body whose document starts with `mutation`). */
  seen: { queries: number; mutations: number; health: number };
  /** The length of `variables.representations` of each `_entities` fetch that reached it. */
  representations: number[];
  close(): Promise<void>;
}

/**
 * A replica address under the test's control. In `forward` mode it relays to `upstream` (a real
 * subgraph) and counts what passed; in `graphql` mode it answers `graphqlAnswer` as a subgraph
 * would; in the other modes it answers as a balancer or a broken replica would. Counting happens in every mode, so a test can tell whether a request was sent.
 */
export async function startFakeReplica(upstream?: string): Promise<FakeReplica> {
  const replica: FakeReplica = {
    url: '',
    port: 0,
    mode: 'forward',
    graphqlAnswer: { data: {} },
    seen: { queries: 0, mutations: 0, health: 0 },
    representations: [],
    close,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      count(replica, req, body);
      if (replica.mode === 'graphql' && !isProbe(req)) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(replica.graphqlAnswer));
        return;
      }
      void answer(replica.mode, upstream, req, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  replica.port = (server.address() as AddressInfo).port;
  replica.url = `http://127.0.0.1:${replica.port}/graphql`;
  async function close() {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return replica;
}

/** The probes a gateway sends a replica (its /readyz, and /healthz for the readiness report). */
function isProbe(req: http.IncomingMessage): boolean {
  return Boolean(req.url?.startsWith('/healthz') || req.url?.startsWith('/readyz'));
}

function count(replica: FakeReplica, req: http.IncomingMessage, body: string) {
  if (isProbe(req)) {
    replica.seen.health += 1;
    return;
  }
  let parsed: { query?: unknown; variables?: { representations?: unknown } } = {};
  try {
    parsed = JSON.parse(body) as typeof parsed;
  } catch {
    parsed = {};
  }
  const query = String(parsed.query ?? '');
  const representations = parsed.variables?.representations;
  if (Array.isArray(representations)) replica.representations.push(representations.length);
  if (/^\s*mutation\b/.test(query)) replica.seen.mutations += 1;
  else replica.seen.queries += 1;
}

async function answer(
  mode: ReplicaMode,
  upstream: string | undefined,
  req: http.IncomingMessage,
  body: string,
  res: http.ServerResponse,
) {
  const html = { 'content-type': 'text/html' };
  switch (mode) {
    case 'hang':
      return;
    case 'html-502':
      res.writeHead(502, html).end(BALANCER_PAGES[502]);
      return;
    case 'html-503':
      res.writeHead(503, html).end(BALANCER_PAGES[503]);
      return;
    case 'html-200':
      res.writeHead(200, html).end(BALANCER_PAGES[200]);
      return;
    case 'json-200':
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"maintenance","backend":"10.0.3.7:4001"}');
      return;
    case 'draining':
      // A replica shutting down: not ready any more, still answering what it is sent.
      if (isProbe(req) && req.url?.startsWith('/readyz')) {
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"ready":false}');
        return;
      }
      await relay(upstream, req, body, res);
      return;
    case 'graphql':
    case 'forward':
      await relay(upstream, req, body, res);
  }
}

async function relay(upstream: string | undefined, req: http.IncomingMessage, body: string, res: http.ServerResponse) {
  if (!upstream) {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{}}');
    return;
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string' && !['host', 'content-length', 'connection'].includes(name)) headers[name] = value;
  }
  try {
    // The real subgraph behind a fake is started without readiness checks: it is ready while it lives.
    const target = new URL(isProbe(req) ? '/healthz' : (req.url ?? '/'), upstream);
    const response = await fetch(target, { method: req.method, headers, body: req.method === 'GET' ? undefined : body });
    res.writeHead(response.status, { 'content-type': response.headers.get('content-type') ?? 'application/json' });
    res.end(await response.text());
  } catch {
    res.writeHead(502, { 'content-type': 'text/html' }).end(BALANCER_PAGES[502]);
  }
}
