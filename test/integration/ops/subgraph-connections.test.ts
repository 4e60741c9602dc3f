import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subgraphDispatcher, subgraphFetcher } from '../../../gateway/subgraph-fetch.js';

/** A subgraph stand-in that counts the sockets the gateway opens and the requests it serves. */
async function countingServer() {
  const seen = { connections: 0, requests: 0 };
  const server = http.createServer((req, res) => {
    seen.requests += 1;
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{}}'));
  });
  server.on('connection', () => {
    seen.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  return { seen, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('connections from the gateway to a subgraph', () => {
  let subgraph: Awaited<ReturnType<typeof countingServer>>;
  beforeAll(async () => {
    subgraph = await countingServer();
  });
  afterAll(async () => subgraph?.close());

  async function burst(maxConnections: number, requests: number) {
    Object.assign(subgraph.seen, { connections: 0, requests: 0 });
    const dispatcher = subgraphDispatcher(maxConnections);
    const fetch = subgraphFetcher('catalog', dispatcher);
    const bodies = await Promise.all(
      Array.from({ length: requests }, () =>
        fetch(subgraph.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then((r) =>
          r.text(),
        ),
      ),
    );
    await dispatcher.close();
    return { bodies, ...subgraph.seen };
  }

  it('opens at most SUBGRAPH_MAX_CONNECTIONS sockets and reuses them; the rest of a burst waits its turn', async () => {
    const bounded = await burst(2, 12);
    expect(bounded.bodies).toEqual(Array(12).fill('{"data":{}}'));
    expect(bounded.requests).toBe(12);
    expect(bounded.connections).toBe(2);
  });

  it('opens a socket per request in flight when the bound allows it (the control: the bound is what limits)', async () => {
    const wide = await burst(12, 12);
    expect(wide.requests).toBe(12);
    // All 12 are sent before the first answer: no connection is free to reuse yet.
    expect(wide.connections).toBe(12);
  });
});

describe('what the subgraph fetch hands Apollo Gateway', () => {
  const served = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/graphql?fail') res.writeHead(502, { 'content-type': 'text/plain' }).end('upstream down');
      else
        res
          .writeHead(200, { 'content-type': 'application/json', 'x-seen-tenant': String(req.headers['x-tenant-id']) })
          .end('{"data":{"ok":true}}');
    });
  });
  let base: string;
  const dispatcher = subgraphDispatcher(2);
  const fetch = subgraphFetcher('catalog', dispatcher);
  beforeAll(async () => {
    await new Promise<void>((resolve) => served.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(served.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await dispatcher.close();
    await new Promise<void>((resolve) => served.close(() => resolve()));
  });

  it('sends the method, headers and body, and answers with a Response Apollo can read (json, headers, clone)', async () => {
    const response = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'x-tenant-id': 'ten_1' }, body: '{}' });
    expect([response.ok, response.status, response.statusText, response.url]).toEqual([true, 200, 'OK', `${base}/graphql`]);
    expect(response.headers.get('Content-Type')).toBe('application/json');
    expect(response.headers.get('x-seen-tenant')).toBe('ten_1');
    const copy = response.clone();
    expect(await response.json()).toEqual({ data: { ok: true } });
    expect(response.bodyUsed).toBe(true);
    expect(await copy.text()).toBe('{"data":{"ok":true}}');
  });

  it('hands a non-2xx answer over as it came (Apollo turns it into the subgraph error)', async () => {
    const response = await fetch(`${base}/graphql?fail`, { method: 'POST', body: '{}' });
    expect([response.ok, response.status, response.statusText]).toEqual([false, 502, 'Bad Gateway']);
    expect(await response.text()).toBe('upstream down');
  });

  it('turns a subgraph it cannot reach into subgraph.unavailable (503, retry after 1 s)', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const failure = await fetch(`http://127.0.0.1:${port}/graphql`, { method: 'POST', body: '{}' }).then(
      () => undefined,
      (error: unknown) => error as { extensions?: Record<string, unknown> },
    );
    expect(failure?.extensions).toMatchObject({
      code: 'subgraph.unavailable',
      serviceName: 'catalog',
      status: 503,
      retryAfterSeconds: 1,
    });
  });
});
