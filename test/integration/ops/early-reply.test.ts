import net, { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonReply, type Reply } from '../../../platform/http/pipeline.js';
import { createHttpServer, serve } from '../../../platform/http/serve.js';
import { createLogger } from '../../../platform/observability/logger.js';

/**
 * A reply sent before the body was read, as a 401 from the headers alone is. The first fix of
 * issue #24 closed the socket at once: a client still writing a large body then got EPIPE instead
 * of the answer (CI: PUT /v1/admin/quota in the OpenAPI contract test). A lingering close reads
 * and discards the rest for up to a second: the fast client reads its 401, the slow one is cut.
 */
describe('a reply sent before the request body was read', () => {
  const server = createHttpServer();
  let port = 0;

  beforeAll(async () => {
    const logger = createLogger({ level: 'error', destination: new Writable({ write: (_c, _e, done) => done() }) });
    serve(server, async (): Promise<Reply> => jsonReply(401, { code: 'auth.missing_token' }), { logger });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('reaches a client that is still sending a large body: it reads the 401, not EPIPE', async () => {
    const body = JSON.stringify({ text: 'x'.repeat(16 * 1024 * 1024) });
    for (let attempt = 0; attempt < 5; attempt++) {
      const response = await fetch(`http://127.0.0.1:${port}/v1/admin/quota`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({ code: 'auth.missing_token' });
    }
  });

  it('keeps reading the body a client sends on after the reply: no reset, the connection serves the next request', async () => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const answers = (count: number) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if ((received.match(/HTTP\/1\.1 401/g) ?? []).length >= count && received.endsWith('}')) resolve();
        };
        socket.on('data', (chunk: Buffer) => {
          received += chunk.toString('latin1');
          check();
        });
        socket.once('close', () => reject(new Error(`closed by the server after: ${received.slice(0, 80)}`)));
        socket.once('error', reject);
      });
    const length = 512 * 1024;
    const first = answers(1);
    socket.write(
      `PUT /v1/admin/quota HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n"`,
    );
    await first;
    socket.removeAllListeners();
    // The rest of the body after the answer, then a second request on the same connection.
    const second = answers(2);
    socket.write(`${'x'.repeat(length - 2)}"GET /v1/ai/health HTTP/1.1\r\nHost: t\r\n\r\n`);
    await second;
    socket.destroy();
  });

  it('cuts a client that trickles its body, about a second after the reply', async () => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now())));
    socket.write('POST /graphql HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{');
    const drip = setInterval(() => socket.write('a'), 100);
    const answeredAt = await new Promise<number>((resolve) => {
      const check = () => (received.includes('\r\n\r\n') ? resolve(Date.now()) : socket.once('data', check));
      socket.once('data', check);
    });
    const closedAt = await closed;
    clearInterval(drip);
    expect(received.startsWith('HTTP/1.1 401')).toBe(true);
    // Cut by the server well before the request timeout (30 s) would have.
    expect(closedAt - answeredAt).toBeLessThan(10_000);
  });
});
