import type { ConsumedEnvelope } from '../../../events/envelope.js';
import type { Tx } from '../../../platform/db/database.js';
import { holdPackages } from '../course-version/held-package.repo.js';
import { lockSubjectCopies } from '../gdpr/gdpr.repo.js';
import { withoutErasedUsers } from '../gdpr/subject-copies.js';
import type { ConsumedEventDeps } from './consumed-event-rules.js';

/** What holding a built event reads of its payload. */
interface HeldPayload {
  slug: string;
  versionLabel: string;
  playPackage: { format: string };
}

/**
 * A package of a format the catalog does not know (enum widening: a producer may announce `v3`
 * before the catalog learns it) is neither dead-lettered nor published: our published event may
 * only name the formats we know, and delivery or enrollment handed a package they cannot play
 * would break for learners. The event is held whole (no course registered, no version) and
 * applied when a catalog that knows the format starts (releaseHeldPlayPackages).
 */
export async function holdUnknownFormats(
  tx: Tx,
  held: ReadonlyArray<{ envelope: ConsumedEnvelope; p: HeldPayload; tenantId: string }>,
  deps: Pick<ConsumedEventDeps, 'logger' | 'gdprZeroingRetentionClasses'>,
): Promise<void> {
  // Before reading the erasures: a GDPR request running now either commits first (its erasure is
  // read here) or waits and then finds these rows (lockSubjectCopies).
  for (const tenantId of [...new Set(held.map((h) => h.tenantId))].sort()) await lockSubjectCopies(tx, tenantId);
  const rows = [];
  for (const { envelope, p, tenantId } of held) {
    // A stored copy like any other: users erased before it arrived do not come back through it.
    const stored = await withoutErasedUsers(tx, { tenantId, slug: p.slug }, envelope, deps.gdprZeroingRetentionClasses);
    rows.push({ tenantId, eventId: envelope.eventId, slug: p.slug, format: p.playPackage.format, envelope: stored });
  }
  await holdPackages(tx, rows);
  for (const { envelope, p } of held) {
    deps.logger.warn(
      { eventId: envelope.eventId, slug: p.slug, versionLabel: p.versionLabel, format: p.playPackage.format },
      'play package of a format the catalog does not know: held until a release knows it',
    );
  }
}
