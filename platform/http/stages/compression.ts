import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { chooseCoding, worthCompressing, type Coding } from '../compression.logic.js';
import { header } from '../http.js';
import type { Reply, Stage } from '../pipeline.js';

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/** Fast settings: replies are compressed per request, on the event loop's thread pool. */
const ENCODERS: Record<Coding, (body: Buffer) => Promise<Buffer>> = {
  br: (body) =>
    brotli(body, {
      params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length },
    }),
  gzip: (body) => gzip(body, { level: 6 }),
};

/**
 * Compresses replies over 1 KiB with br or gzip as Accept-Encoding allows (issue #26: /openapi.json
 * and list pages went out uncompressed), every reply saying `Vary: Accept-Encoding`. Placed outside
 * the error replies, so large errors are compressed too.
 *
 * A reply that will not be compressed passes as it came: its text is encoded once, by the socket
 * write. (It was encoded into a Buffer here only to learn its length, then again when written:
 * about 1 ns a byte, some 3 % of the gateway's CPU on the 240 KB wide page; bench/README.md.)
 */
export function compression(): Stage {
  return async (exchange, next) => {
    const reply = await next(exchange);
    const headers = { ...reply.headers, vary: addVary(reply.headers.vary, 'Accept-Encoding') };
    const coding = exchange.method === 'HEAD' ? undefined : chooseCoding(header(exchange.req, 'accept-encoding'));
    const worth =
      coding !== undefined &&
      worthCompressing({
        status: reply.status,
        contentType: reply.headers['content-type'],
        contentEncoding: reply.headers['content-encoding'],
        bytes: Buffer.byteLength(reply.body),
      });
    if (!worth) return { ...reply, headers };
    // The ETag stays as it is: it names the resource's state, which If-Match compares strongly on
    // writes; weakening it for compressed replies would make every compressing client's write 412.
    const body = typeof reply.body === 'string' ? Buffer.from(reply.body) : reply.body;
    const compressed: Reply = {
      status: reply.status,
      headers: { ...headers, 'content-encoding': coding },
      body: await ENCODERS[coding](body),
    };
    return compressed;
  };
}

function addVary(existing: string | undefined, name: string): string {
  if (!existing) return name;
  return existing.split(',').some((v) => v.trim().toLowerCase() === name.toLowerCase() || v.trim() === '*')
    ? existing
    : `${existing}, ${name}`;
}
