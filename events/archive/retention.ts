import type { Db } from '../../platform/db/database.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { Clock } from '../../platform/clock.js';
import { purgeInbox } from '../ledger/inbox.js';
import { monthsBefore, purgeArchive } from './outbox-archive.js';

/**
 * The event tables' retention, run by every event worker: published outbox rows past the cold
 * archive (OUTBOX_ARCHIVE_MONTHS) and inbox rows past the same horizon plus a day. An inbox row
 * must outlive every way its event can come back — the archive replay re-publishes events up to
 * the archive's age, and the consumer's inbox is what makes it skip them — and it is written a
 * little after its event was published, hence the extra day. Replicas may run it at the same
 * time: the deletes are idempotent and batched.
 */
export interface RetentionJob {
  /** One pass; resolves with the rows deleted. */
  runOnce(): Promise<{ archive: number; inbox: number }>;
  start(): void;
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
}

const INBOX_MARGIN_MS = 24 * 3_600_000;

export function createRetentionJob(deps: {
  db: Db;
  clock: Clock;
  logger: Logger;
  archiveMonths: number;
  intervalMs: number;
}): RetentionJob {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;

  async function runOnce() {
    const now = deps.clock.now();
    const archive = await purgeArchive(deps.db, now, deps.archiveMonths);
    const inbox = await purgeInbox(deps.db, new Date(monthsBefore(now, deps.archiveMonths).getTime() - INBOX_MARGIN_MS));
    if (archive || inbox) deps.logger.info({ archive, inbox, archiveMonths: deps.archiveMonths }, 'event retention purged rows');
    return { archive, inbox };
  }

  const tick = () => {
    if (running) return;
    running = runOnce()
      .catch((error: unknown) =>
        deps.logger.warn({ err: (error as Error).message }, 'event retention pass failed; next pass retries'),
      )
      .finally(() => {
        running = undefined;
      });
  };

  return {
    runOnce,
    start() {
      tick();
      timer = setInterval(tick, deps.intervalMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
