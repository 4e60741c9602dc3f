import { isAppError } from '../platform/errors/errors.js';
import type { Logger } from '../platform/observability/logger.js';
import type { EventWorker } from './worker.js';

/** The event worker of a process, running or still waiting for the producers' streams. */
export interface PendingWorker {
  /** The running worker, once the streams it consumes exist. */
  current(): EventWorker | undefined;
  /** Why it is not running yet: the missing streams and how they come to exist. */
  waitingFor(): string | undefined;
  /** Stops waiting, or stops the worker (an attempt in flight is awaited first). */
  stop(): Promise<void>;
}

export interface StreamWaitOptions {
  logger: Logger;
  /** First pause between attempts, doubled up to `maxMs`. */
  firstMs?: number;
  maxMs?: number;
}

const isStreamMissing = (error: unknown) => isAppError(error) && error.code === 'events.stream_missing';

/**
 * Starts the event worker once the producers' streams exist (issue #26). Each producer creates its
 * own stream, so a worker deployed before one of them is an ordering matter, not a fault: it waits,
 * retrying with back-off, reports not ready (`waitingFor`) and logs one line each time what is
 * missing changes. Any other failure of the first attempt still stops the start, as it always did.
 */
export async function startWorkerWhenStreamsExist(
  start: () => Promise<EventWorker>,
  options: StreamWaitOptions,
): Promise<PendingWorker> {
  const { logger } = options;
  const firstMs = options.firstMs ?? 1_000;
  const maxMs = options.maxMs ?? 15_000;
  let worker: EventWorker | undefined;
  let waiting: string | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let attempt: Promise<void> = Promise.resolve();

  const noteWaiting = (message: string) => {
    if (message !== waiting) logger.warn({ code: 'events.stream_missing' }, `event worker waiting: ${message}`);
    waiting = message;
  };

  try {
    worker = await start();
  } catch (error) {
    if (!isStreamMissing(error)) throw error;
    noteWaiting((error as Error).message);
  }

  const retry = (delayMs: number) => {
    timer = setTimeout(() => {
      attempt = start().then(
        async (started) => {
          if (stopped) return started.stop();
          worker = started;
          waiting = undefined;
          logger.info('event worker started: the streams it consumes exist now');
        },
        (error: unknown) => {
          if (stopped) return;
          if (isStreamMissing(error)) noteWaiting((error as Error).message);
          else logger.error({ err: (error as Error).message }, 'event worker start failed; retrying');
          retry(Math.min(delayMs * 2, maxMs));
        },
      );
    }, delayMs);
  };
  if (!worker) retry(firstMs);

  return {
    current: () => worker,
    waitingFor: () => waiting,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await attempt;
      await worker?.stop();
    },
  };
}
