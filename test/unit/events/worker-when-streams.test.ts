import { describe, expect, it } from 'vitest';
import type { EventWorker } from '../../../events/worker.js';
import { startWorkerWhenStreamsExist } from '../../../events/worker-when-streams.js';
import { AppError } from '../../../platform/errors/errors.js';
import { silentLogger } from '../../../platform/observability/logger.js';

const missing = () => new AppError('events.stream_missing', 'Stream CONTENT (content.>) does not exist.', { status: 503 });

/** A start that fails with `failures` in turn, then starts a worker; `attempts` counts calls. */
function starts(failures: Error[]) {
  const state = { attempts: 0, stopped: 0, next: undefined as (() => void) | undefined };
  const worker = { stop: async () => void (state.stopped += 1) } as unknown as EventWorker;
  const start = async () => {
    state.attempts += 1;
    state.next?.();
    const failure = failures.shift();
    if (failure) throw failure;
    return worker;
  };
  const attempt = (n: number) =>
    new Promise<void>((resolve) => {
      state.next = () => state.attempts >= n && resolve();
    });
  return { start, state, worker, attempt };
}

describe('the event worker waits for the producers’ streams', () => {
  it('starts at once when the streams exist', async () => {
    const { start, worker } = starts([]);
    const pending = await startWorkerWhenStreamsExist(start, { logger: silentLogger });
    expect(pending.current()).toBe(worker);
    expect(pending.waitingFor()).toBeUndefined();
  });

  it('waits, naming what is missing, and starts on a later attempt', async () => {
    const { start, state, attempt } = starts([missing(), missing()]);
    const third = attempt(3);
    const pending = await startWorkerWhenStreamsExist(start, { logger: silentLogger, firstMs: 1, maxMs: 2 });
    expect(pending.current()).toBeUndefined();
    expect(pending.waitingFor()).toMatch(/Stream CONTENT/);
    await third;
    // Stopped while the third attempt runs: the worker it starts is stopped at once.
    await pending.stop();
    expect(state.attempts).toBe(3);
    expect(state.stopped).toBe(1);
  });

  it('keeps retrying after another failure once it is waiting', async () => {
    const { start, state, attempt } = starts([missing(), new Error('connection refused'), missing()]);
    const fourth = attempt(4);
    const pending = await startWorkerWhenStreamsExist(start, { logger: silentLogger, firstMs: 1, maxMs: 2 });
    await fourth;
    await pending.stop();
    expect(state.attempts).toBe(4);
  });

  it('fails the start on any other error of the first attempt', async () => {
    const { start } = starts([new Error('database unreachable')]);
    await expect(startWorkerWhenStreamsExist(start, { logger: silentLogger })).rejects.toThrow('database unreachable');
  });

  it('stops trying once stopped', async () => {
    const { start, state } = starts([missing(), missing(), missing()]);
    const pending = await startWorkerWhenStreamsExist(start, { logger: silentLogger, firstMs: 60_000 });
    await pending.stop();
    expect(state.attempts).toBe(1);
    expect(pending.current()).toBeUndefined();
  });
});
