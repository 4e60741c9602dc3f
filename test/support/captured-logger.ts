import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../platform/observability/logger.js';

/** A logger whose JSON lines the test reads, in order. */
export function capturedLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ destination }), lines };
}
