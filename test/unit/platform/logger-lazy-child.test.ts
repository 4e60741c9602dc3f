import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { createLogger, lazyChild } from '../../../platform/observability/logger.js';

function capture(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ level, destination }), lines };
}

describe('lazyChild', () => {
  it('makes no child for calls at levels that are off, and one child, redacted like any, once a line is written', () => {
    const { logger, lines } = capture('warn');
    const child = vi.spyOn(logger, 'child');
    const lazy = lazyChild(logger, { requestId: 'req-1', authorization: 'Bearer secret-token-value' });

    lazy.info({ provenanceId: 'prv_1' }, 'assist');
    lazy.debug('details');
    expect(child).not.toHaveBeenCalled();
    expect(lines).toEqual([]);

    lazy.warn({ featureKey: 'portal.triage' }, 'held');
    lazy.error('failed');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toMatchObject([
      { level: 40, requestId: 'req-1', authorization: '[redacted]', featureKey: 'portal.triage', msg: 'held' },
      { level: 50, requestId: 'req-1', msg: 'failed' },
    ]);
  });

  it('is the child for everything else a logger offers', () => {
    const { logger, lines } = capture('info');
    const lazy = lazyChild(logger, { requestId: 'req-2' });
    expect(lazy.isLevelEnabled('debug')).toBe(false);
    expect(lazy.bindings()).toEqual({ requestId: 'req-2' });
    lazy.child({ stage: 'record' }).info('nested');
    expect(lines).toMatchObject([{ requestId: 'req-2', stage: 'record', msg: 'nested' }]);
  });
});
