import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptFetch, subgraphDispatcher } from '../../../gateway/subgraph-calls/subgraph-fetch.js';

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
    const request = { headers: { 'content-type': 'application/json' }, body: '{}' };
    const bodies = await Promise.all(
      Array.from({ length: requests }, () =>
        attemptFetch(dispatcher, subgraph.url, request, 10_000).then((outcome) =>
          outcome.kind === 'answered' ? JSON.stringify(outcome.answer) : outcome.reason,
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

describe('what one attempt at a replica comes back with', () => {
  const served = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/graphql?fail') res.writeHead(502, { 'content-type': 'text/html' }).end('<html>upstream down</html>');
      else if (req.url === '/graphql?coded')
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end('{"errors":[{"message":"too costly","extensions":{"code":"query.too_costly"}}]}');
      else if (req.url === '/graphql?hang') return;
      else
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ data: { tenant: req.headers['x-tenant-id'], body: 'seen' } }));
    });
  });
  let base: string;
  const dispatcher = subgraphDispatcher(2);
  beforeAll(async () => {
    await new Promise<void>((resolve) => served.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(served.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await dispatcher.close();
    served.closeAllConnections();
    await new Promise<void>((resolve) => served.close(() => resolve()));
  });
  const send = (path: string, timeoutMs = 10_000) =>
    attemptFetch(dispatcher, `${base}${path}`, { headers: { 'x-tenant-id': 'ten_1' }, body: '{}' }, timeoutMs);

  it('sends the headers and body, and hands over the GraphQL answer', async () => {
    expect(await send('/graphql')).toEqual({
      kind: 'answered',
      status: 200,
      answer: { data: { tenant: 'ten_1', body: 'seen' } },
    });
  });

  it("hands over a subgraph's own coded errors whatever the HTTP status (they are GraphQL)", async () => {
    expect(await send('/graphql?coded')).toEqual({
      kind: 'answered',
      status: 400,
      answer: { errors: [{ message: 'too costly', extensions: { code: 'query.too_costly' } }] },
    });
  });

  it('classifies a 5xx page as unavailable, keeping what answered for the log', async () => {
    expect(await send('/graphql?fail')).toEqual({
      kind: 'unavailable',
      reason: 'answered HTTP 502',
      excerpt: '<html>upstream down</html>',
      sent: true,
    });
  });

  it('ends an attempt that gets no answer at its deadline', async () => {
    expect(await send('/graphql?hang', 200)).toEqual({
      kind: 'unavailable',
      reason: 'no answer within 200 ms',
      sent: true,
    });
  });

  it('marks a refused connection as never sent (any operation may go to another replica)', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const outcome = await attemptFetch(dispatcher, `http://127.0.0.1:${port}/graphql`, { headers: {}, body: '{}' }, 10_000);
    expect(outcome).toEqual({ kind: 'unavailable', reason: 'connection failed (ECONNREFUSED)', sent: false });
  });
});
