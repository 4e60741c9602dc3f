import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../platform/observability/logger.js';
import { jsonReply, pipeline, type EndpointTable, type Stage } from '../../../platform/http/pipeline.js';
import { answerWithEndpoint, createHttpServer, serve } from '../../../platform/http/serve.js';
import { accessLog } from '../../../platform/http/stages/access-log.js';
import { readBody } from '../../../platform/http/stages/body.js';
import { errorReplies } from '../../../platform/http/stages/error-replies.js';
import { route } from '../../../platform/http/stages/route.js';
import { eventually } from '../../support/eventually.js';

/**
 * A client that goes away in the middle of its body is its own choice: one access-log line at info
 * (status 499), no error and no stack (on b3f46fc each one logged "unhandled error" with a stack).
 */
describe('a client that closes the connection mid-body', () => {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger({ level: 'info', destination: sink });
  const server = createHttpServer();
  const echo: EndpointTable = {
    resolve: (exchange) =>
      exchange.url.pathname === '/echo'
        ? {
            kind: 'found',
            params: {},
            endpoint: {
              route: '/echo',
              access: 'public',
              body: true,
              errors: 'problem',
              handle: async (e) => jsonReply(200, e.body ?? null),
            },
          }
        : { kind: 'not_found' },
  };
  let port = 0;
  let settled = 0;
  /** Outermost stage: counts requests whose pipeline has finished, error rendering included. */
  const countSettled: Stage = async (exchange, next) => {
    try {
      return await next(exchange);
    } finally {
      settled += 1;
    }
  };

  beforeAll(async () => {
    serve(
      server,
      pipeline(
        [countSettled, accessLog({ service: 'test', logger }), errorReplies(logger), route([echo]), readBody(1024 * 1024)],
        answerWithEndpoint,
      ),
      {
        logger,
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('leaves one access-log line with status 499 at info, and nothing at error', async () => {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"a":');
    await eventually(() => lines.length === 0 && socket.bytesWritten > 0, 'the request to be sent');
    socket.destroy();
    await eventually(() => settled === 1 && lines.some((line) => line.msg === 'request'), 'the request to settle');
    expect(lines.find((line) => line.msg === 'request')).toMatchObject({ level: 30, route: '/echo', status: 499, aborted: true });
    expect(lines.filter((line) => Number(line.level) >= 50)).toEqual([]);
    expect(JSON.stringify(lines)).not.toContain('"stack"');
  });
});
