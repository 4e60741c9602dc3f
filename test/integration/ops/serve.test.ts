import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Agent, fetch as undiciFetch } from 'undici';
import { describe, expect, it } from 'vitest';
import { pipeline, reply, type Endpoint, type Reply } from '../../../platform/http/pipeline.js';
import { answerWithEndpoint, serve } from '../../../platform/http/serve.js';
import { accessLog } from '../../../platform/http/stages/access-log.js';
import { errorReplies } from '../../../platform/http/stages/error-replies.js';
import { requestId } from '../../../platform/http/stages/request-id.js';
import { route } from '../../../platform/http/stages/route.js';
import { traceContext } from '../../../platform/http/stages/trace-context.js';
import { createLogger } from '../../../platform/observability/logger.js';
import { createMetrics } from '../../../platform/observability/metrics.js';
import { eventually } from '../../support/eventually.js';

/** A server whose /slow requests finish only when the test releases them, behind the first stages of every pipeline. */
async function slowServer(serverOptions: http.ServerOptions = {}) {
  const releases: Array<() => void> = [];
  let arrived: () => void = () => {};
  const endpoint = (path: string, handle: () => Promise<Reply>): Endpoint => ({
    route: path,
    access: 'public',
    errors: 'problem',
    handle,
  });
  const endpoints = new Map([
    [
      '/slow',
      endpoint(
        '/slow',
        () =>
          new Promise<Reply>((resolve) => {
            arrived();
            releases.push(() => resolve(reply(200, 'x'.repeat(64 * 1024))));
          }),
      ),
    ],
    ['/fast', endpoint('/fast', async () => reply(200, 'fast'))],
  ]);
  const server = http.createServer(serverOptions);
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const metrics = createMetrics({ defaultMetrics: false });
  const logger = createLogger({ level: 'debug', destination });
  const handler = pipeline(
    [
      requestId(),
      traceContext('test'),
      accessLog({ service: 'test', logger, metrics }),
      errorReplies(logger),
      route([
        {
          resolve: (exchange) => {
            const found = endpoints.get(exchange.url.pathname);
            return found ? { kind: 'found', endpoint: found, params: {} } : { kind: 'not_found' };
          },
        },
      ]),
    ],
    answerWithEndpoint,
  );
  const observed = serve(server, handler, { logger });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const nextArrival = () => new Promise<void>((resolve) => (arrived = resolve));
  return { server, observed, base, releases, lines, metrics, nextArrival };
}

/** A raw keep-alive connection: what it received, its socket errors, and when it closed. */
function rawConnection(base: string) {
  const socket = net.connect(Number(new URL(base).port), '127.0.0.1');
  let received = '';
  const errors: string[] = [];
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', (error: NodeJS.ErrnoException) => errors.push(error.code ?? error.message));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return {
    socket,
    errors,
    closed,
    connected,
    received: () => received,
    /** The responses so far: status and whether each said `Connection: close`. */
    responses: () =>
      [...received.matchAll(/HTTP\/1\.1 (\d{3})[^\r]*\r\n((?:[^\r]+\r\n)*)\r\n/g)].map(([, status, head]) => ({
        status: Number(status),
        closes: /^connection: close$/im.test(head),
      })),
  };
}

interface AccessLine {
  msg: string;
  requestId?: string;
  status?: number;
}

const accessLines = (lines: string[]) => lines.map((l) => JSON.parse(l) as AccessLine).filter((l) => l.msg === 'request');

const CLIENTS = 8;

describe('serve: drain', () => {
  it('lets in-flight requests finish completely, refuses new connections, then resolves', async () => {
    const { observed, base, releases, nextArrival } = await slowServer();
    const arrivals = Promise.all([nextArrival()]);
    const inFlight = fetch(`${base}/slow`).then(async (r) => ({
      status: r.status,
      connection: r.headers.get('connection'),
      body: await r.text(),
    }));
    await arrivals;
    expect(observed.inFlight()).toBe(1);

    let drained = false;
    const drain = observed.drain(10_000).then(() => (drained = true));
    // The listener is closed at once: a new connection is refused, not queued.
    await expect(fetch(`${base}/fast`)).rejects.toThrow();
    expect(drained).toBe(false);

    releases[0]();
    const result = await inFlight;
    expect(result.status).toBe(200);
    expect(result.body).toHaveLength(64 * 1024);
    // The client is told not to reuse the connection.
    expect(result.connection).toBe('close');
    await drain;
    expect(drained).toBe(true);
    expect(observed.inFlight()).toBe(0);
  });

  it('answers a pipelined request accepted before the drain, then closes the connection', async () => {
    const { observed, base, releases, nextArrival } = await slowServer();
    const socket = net.connect(Number(new URL(base).port), '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    const arrived = nextArrival();
    socket.write('GET /slow HTTP/1.1\r\nHost: t\r\n\r\nGET /fast HTTP/1.1\r\nHost: t\r\n\r\n');
    await arrived;
    // Both requests parsed and in flight (the second waits behind the first on the socket).
    const deadline = Date.now() + 5_000;
    while (observed.inFlight() < 2 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    expect(observed.inFlight()).toBe(2);
    const drain = observed.drain(10_000);
    releases[0]();
    await drain;
    await closed;
    const statuses = received.match(/HTTP\/1\.1 \d{3}/g);
    expect(statuses).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);
    expect(received.endsWith('fast')).toBe(true);
  });

  it('in the drain period, closes a connection after its last pipelined request only', async () => {
    const { observed, base, releases, nextArrival } = await slowServer();
    const connection = rawConnection(base);
    const arrived = nextArrival();
    connection.socket.write('GET /slow HTTP/1.1\r\nHost: t\r\n\r\nGET /fast HTTP/1.1\r\nHost: t\r\n\r\n');
    await arrived;
    await eventually(() => observed.inFlight() === 2, 'both requests in flight');
    observed.closeConnectionsAfterReply();
    releases[0]();
    await connection.closed;
    expect(connection.errors).toEqual([]);
    expect(connection.responses()).toEqual([
      { status: 200, closes: false },
      { status: 200, closes: true },
    ]);
    await observed.drain(10_000);
  });

  it('serves a request that arrives on an idle keep-alive connection after the drain began, then closes that connection', async () => {
    const { observed, base, lines } = await slowServer();
    const connection = rawConnection(base);
    connection.socket.write('GET /fast HTTP/1.1\r\nHost: t\r\nX-Request-Id: req_before\r\n\r\n');
    await eventually(() => connection.responses().length === 1 && connection.received().endsWith('fast'), 'the first reply');
    // The connection is now idle and kept alive; the client sends on it just as the drain begins
    // (a balancer that has not yet seen /readyz turn 503 does exactly this).
    const drained = observed.drain(10_000);
    connection.socket.write('GET /fast HTTP/1.1\r\nHost: t\r\nX-Request-Id: req_during\r\n\r\n');
    await connection.closed;
    await drained;
    expect(connection.errors).toEqual([]);
    expect(connection.responses()).toEqual([
      { status: 200, closes: false },
      { status: 200, closes: true },
    ]);
    const logged = accessLines(lines).map((l) => [l.requestId, l.status]);
    expect(logged).toEqual([
      ['req_before', 200],
      ['req_during', 200],
    ]);
  });

  it('under keep-alive load resets no connection: every request sent is answered, and every answer is in the access log', async () => {
    const { observed, base, lines } = await slowServer();
    // Clients that reuse their connections back to back, as a balancer's pool does.
    const agent = new Agent({ connections: CLIENTS, pipelining: 1 });
    const answers: Array<{ requestId: string; status: number; retryAfter: string | null; closes: boolean }> = [];
    const failures: string[] = [];
    let next = 0;
    const client = async () => {
      for (;;) {
        const requestId = `req_load_${next++}`;
        try {
          const response = await undiciFetch(`${base}/fast`, { dispatcher: agent, headers: { 'x-request-id': requestId } });
          await response.text();
          answers.push({
            requestId,
            status: response.status,
            retryAfter: response.headers.get('retry-after'),
            closes: response.headers.get('connection') === 'close',
          });
        } catch (error) {
          const code = (error as { cause?: { code?: string } }).cause?.code ?? String(error);
          // A refused connection is the closed listener: nothing was sent, the client goes
          // elsewhere. Anything else (a reset, "other side closed") is a request lost in the drain.
          if (code === 'ECONNREFUSED') return;
          failures.push(`${requestId}: ${code}`);
        }
      }
    };
    const clients = Array.from({ length: CLIENTS }, client);
    await eventually(() => answers.length >= CLIENTS * 20, 'the clients to be under way');
    await observed.drain(10_000);
    await Promise.all(clients);
    await agent.close();

    expect(failures, `${answers.length} answered`).toEqual([]);
    // Served, or (only what cannot be served) refused with Retry-After: never an unexplained error.
    expect(answers.filter((a) => a.status !== 200 && !(a.status === 503 && a.retryAfter))).toEqual([]);
    // Requests on connections open at the drain were served, each closing its connection.
    expect(answers.filter((a) => a.closes).length).toBeGreaterThan(0);
    const logged = new Map(accessLines(lines).map((l) => [l.requestId, l.status]));
    expect(answers.filter((a) => logged.get(a.requestId) !== a.status)).toEqual([]);
    expect(lines.filter((l) => l.includes('drain bound reached'))).toEqual([]);
  });

  it("ends connections that stay silent at the server's own timeouts, not at the drain bound", async () => {
    const { observed, base, lines } = await slowServer({
      keepAliveTimeout: 1_000,
      keepAliveTimeoutBuffer: 100,
      headersTimeout: 1_000,
      requestTimeout: 2_000,
      connectionsCheckingInterval: 100,
    });
    // One connection that carried a request and is idle, one that never sent anything.
    const used = rawConnection(base);
    used.socket.write('GET /fast HTTP/1.1\r\nHost: t\r\n\r\n');
    const silent = rawConnection(base);
    await silent.connected;
    await eventually(() => used.received().endsWith('fast'), 'the reply');
    // What a client is told, and keeps to: it must not reuse the connection after a second.
    expect(used.received()).toMatch(/^keep-alive: timeout=1$/im);
    await observed.drain(10_000);
    await Promise.all([used.closed, silent.closed]);
    expect([...used.errors, ...silent.errors]).toEqual([]);
    expect(used.responses()).toEqual([{ status: 200, closes: false }]);
    expect(lines.filter((l) => l.includes('drain bound reached'))).toEqual([]);
  });

  it('cuts connections still open when the drain bound is reached', async () => {
    const { observed, base, nextArrival } = await slowServer();
    const arrived = nextArrival();
    const stuck = fetch(`${base}/slow`).then(
      () => 'answered',
      () => 'cut',
    );
    await arrived;
    await observed.drain(200);
    expect(await stuck).toBe('cut');
  });
});

describe('the first stages record', () => {
  it('one access line and HTTP metrics per request, with a low-cardinality route', async () => {
    const { base, lines, metrics, observed } = await slowServer();
    const response = await fetch(`${base}/fast`, { headers: { 'x-request-id': 'req_given', 'x-tenant-id': 'ten_x' } });
    await response.text();
    const deadline = Date.now() + 2_000;
    while (!lines.some((l) => l.includes('req_given')) && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    const line = JSON.parse(lines.find((l) => l.includes('req_given'))!) as Record<string, unknown>;
    expect(line).toMatchObject({
      msg: 'request',
      requestId: 'req_given',
      tenantId: 'ten_x',
      method: 'GET',
      route: '/fast',
      status: 200,
    });
    expect(line.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect((await metrics.render()).body).toMatch(
      /^http_requests_total\{service="test",method="GET",route="\/fast",status="200"\} 1$/m,
    );
    await observed.drain(1_000);
  });

  it('labels a request no endpoint took as unmatched, whatever its path', async () => {
    const { base, metrics, observed } = await slowServer();
    for (const path of ['/nope/1', '/nope/2', '/crs_01JD0000000000000000000000']) await (await fetch(`${base}${path}`)).text();
    const text = (await metrics.render()).body;
    expect(text).toMatch(/^http_requests_total\{service="test",method="GET",route="unmatched",status="404"\} 3$/m);
    expect(text).not.toContain('/nope');
    await observed.drain(1_000);
  });
});
