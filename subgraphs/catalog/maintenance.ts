import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db/database.js';
import type { Logger } from '../../platform/observability/logger.js';
import { oneLine } from '../../events/error-text.logic.js';
import { completeRecordedErasures } from './gdpr/subject-copies.js';
import type { CatalogEvents } from './outbox-port.js';
import { releaseHeldPlayPackages } from './use-cases/release-held-packages.js';

export interface CatalogMaintenanceDeps {
  db: Db;
  logger: Logger;
  clock: Clock;
  events: CatalogEvents;
  gdprZeroingRetentionClasses: readonly string[];
  /** Called after released packages' events commit (wake the outbox relay). */
  afterEventsCommitted?: () => void;
}

/**
 * Work a catalog process does once when it starts, after a deploy may have taught it something
 * new: erasures recorded before they reached every copy of the subject are completed, and built
 * events held for a play package format this build now publishes are applied. It runs in the
 * background (the server answers meanwhile) and every replica may run it at once (each step takes
 * its rows with SKIP LOCKED). Never rejects: a failure is logged and the next start retries.
 */
export async function runCatalogMaintenance(deps: CatalogMaintenanceDeps): Promise<void> {
  try {
    const erasures = await completeRecordedErasures(deps.db, {
      zeroingClasses: deps.gdprZeroingRetentionClasses,
      logger: deps.logger,
      events: deps.events,
      afterEventsCommitted: deps.afterEventsCommitted,
    });
    if (erasures) deps.logger.info({ erasures }, 'recorded erasures now reach every copy of their subjects');
    const packages = await releaseHeldPlayPackages(deps);
    if (packages.released || packages.failed) deps.logger.info(packages, 'held play packages of formats now known');
  } catch (error) {
    deps.logger.error({ err: oneLine(error) }, 'catalog start-up maintenance failed; the next start retries it');
  }
}
