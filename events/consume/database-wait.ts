import type { Db } from '../../platform/db/database.js';
import type { Logger } from '../../platform/observability/logger.js';
import { retryDelayMs } from '../retry.logic.js';

/** Set once by the consumer's stop(); ends a wait for the database at once. */
export class StopSignal {
  private stopped = false;
  /** Every pause under way: several may wait at once (the safety net decides advisories side by side). */
  private readonly wakes = new Set<() => void>();

  get stopping(): boolean {
    return this.stopped;
  }

  stop(): void {
    this.stopped = true;
    for (const wake of this.wakes) wake();
    this.wakes.clear();
  }

  /** Resolves after `ms`, or at once when stop() is called meanwhile (or was before). */
  pause(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.wakes.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      timer.unref?.();
      this.wakes.add(wake);
    });
  }
}

/**
 * Holds the message (its keep-alive keeps running) until the database answers again. A
 * redelivery could not succeed meanwhile, and each would spend one of the message's deliveries:
 * a restart or failover of a few seconds would dead-letter every message taken during it.
 * False when the consumer is stopping first.
 */
export async function databaseReturned(
  db: Db,
  logger: Logger,
  lastError: string | undefined,
  stop: StopSignal,
): Promise<boolean> {
  logger.warn({ err: lastError }, 'database unreachable; holding the message until it answers');
  for (let attempt = 1; !stop.stopping; attempt++) {
    await stop.pause(retryDelayMs(attempt, { baseMs: 250, maxMs: 5_000 }));
    if (stop.stopping) break;
    if (await answers(db)) return true;
  }
  return false;
}

function answers(db: Db): Promise<boolean> {
  return db.$queryRawUnsafe('SELECT 1').then(
    () => true,
    () => false,
  );
}
