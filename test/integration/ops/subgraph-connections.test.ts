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
