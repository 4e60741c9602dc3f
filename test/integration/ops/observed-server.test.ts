import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { observeServer } from '../../../platform/http/observed-server.js';
import { normaliseRoute } from '../../../platform/http/observed-server.js';
import { createLogger } from '../../../platform/logger.js';
import { createMetrics } from '../../../platform/metrics.js';

/** A server whose /slow requests finish only when the test releases them. */
async function slowServer() {
  const releases: Array<() => void> = [];
  let arrived: () => void = () => {};
  const server = http.createServer((req, res) => {
    if (req.url === '/slow') {
      arrived();
      releases.push(() => res.end('x'.repeat(64 * 1024)));
      return;
    }
    res.end('fast');
  });
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const metrics = createMetrics({ defaultMetrics: false });
  const observed = observeServer(server, { service: 'test', logger: createLogger({ level: 'debug', destination }), metrics });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const nextArrival = () => new Promise<void>((resolve) => (arrived = resolve));
  return { server, observed, base, releases, lines, metrics, nextArrival };
}

describe('observeServer drain', () => {
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

describe('observeServer records', () => {
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

  it('normalises ids out of paths', () => {
    expect(normaliseRoute('/api/v1/courses/crs_01JD0000000000000000000000')).toBe('/api/v1/courses/:id');
    expect(normaliseRoute('/v1/ai/provenance/prv_01JD0000000000000000000000')).toBe('/v1/ai/provenance/:id');
    expect(normaliseRoute('/items/42/parts/3f2504e0-4f89-11d3-9a0c-0305e82c3301')).toBe('/items/:id/parts/:id');
    expect(normaliseRoute('/graphql')).toBe('/graphql');
  });
});
