import type { Clock } from '../../../platform/clock.js';
import type { Db } from '../../../platform/db/database.js';
import type { Logger } from '../../../platform/observability/logger.js';
import { oneLine } from '../../../events/error-text.logic.js';
import { lockNextReleasable, noteReleaseFailed, releaseHeld, type HeldPackage } from '../course-version/held-package.repo.js';
import { PLAY_PACKAGE_FORMATS } from '../course-version/play-package.logic.js';
import type { CatalogEvents } from '../outbox-port.js';
import { publishCourseVersion } from './publish-course-version.js';

export interface ReleaseDeps {
  db: Db;
  events: CatalogEvents;
  logger: Logger;
  clock: Clock;
  gdprZeroingRetentionClasses: readonly string[];
  /** Default PLAY_PACKAGE_FORMATS: what this build of the catalog publishes. */
  playPackageFormats?: readonly string[];
  /** Called after a release's events commit (wake the outbox relay). */
  afterEventsCommitted?: () => void;
}

/**
 * Applies the built events held for a package format the catalog did not know, now that it does
 * (a release added the format to PLAY_PACKAGE_FORMATS and to the published schema): oldest first,
 * one transaction each, exactly as the consumer would have applied them (course registered or
 * merged, version at the course's next sequence, erasures applied on the way in), caused by the
 * held event. A version released this way is sequenced after those published meanwhile, like a
 * replayed dead letter; `becameLatest` is decided by label, so the latest flags stay right. One
 * that fails (say its label was published since with another package) keeps its row with the
 * error and is tried again at the next start. Safe from several processes at once (SKIP LOCKED).
 */
export async function releaseHeldPlayPackages(deps: ReleaseDeps): Promise<{ released: number; failed: number }> {
  const formats = deps.playPackageFormats ?? PLAY_PACKAGE_FORMATS;
  const failed = new Set<string>();
  let released = 0;
  for (;;) {
    let current: HeldPackage | undefined;
    try {
      const done = await deps.db.$transaction(
        async (tx) => {
          current = await lockNextReleasable(tx, formats, failed);
          if (!current) return false;
          await publishCourseVersion(tx, current.envelope, {
            events: deps.events.forConsumedEvent(tx, current.envelope),
            logger: deps.logger,
            clock: deps.clock,
            gdprZeroingRetentionClasses: deps.gdprZeroingRetentionClasses,
            playPackageFormats: formats,
          });
          await releaseHeld(tx, current);
          return true;
        },
        { timeout: 60_000, maxWait: 10_000 },
      );
      if (!done) return { released, failed: failed.size };
      released += 1;
      deps.logger.info({ eventId: current!.eventId, format: current!.format }, 'held play package released');
      deps.afterEventsCommitted?.();
    } catch (error) {
      if (!current) throw error;
      await noteFailure(deps, current, error, failed);
    }
  }
}

async function noteFailure(deps: ReleaseDeps, held: HeldPackage, error: unknown, failed: Set<string>): Promise<void> {
  failed.add(`${held.tenantId}:${held.eventId}`);
  deps.logger.warn(
    { eventId: held.eventId, err: oneLine(error) },
    'a held play package could not be released; kept for the next start',
  );
  await deps.db.$transaction((tx) => noteReleaseFailed(tx, held, oneLine(error)));
}
