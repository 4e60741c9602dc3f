import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
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

/** A server whose /slow requests finish only when the test releases them, behind the first stages of every pipeline. */
async function slowServer() {
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
  const server = http.createServer();
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
