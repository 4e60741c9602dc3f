import type { Prisma, Tx } from '../../../platform/db/database.js';
import type { ConsumedEnvelope } from '../../../events/envelope.js';

export interface HeldPackage {
  tenantId: string;
  eventId: string;
  slug: string;
  format: string;
  envelope: ConsumedEnvelope;
}

/** Holds built events whose package format is unknown; a redelivery of one holds nothing new. */
export async function holdPackages(tx: Tx, held: readonly HeldPackage[]): Promise<void> {
  if (!held.length) return;
  await tx.heldPlayPackage.createMany({
    data: held.map((h) => ({ ...h, envelope: h.envelope as unknown as Prisma.InputJsonValue })),
    skipDuplicates: true,
  });
}

/**
 * The oldest held package of a format now known, locked (another process releasing at the same
 * time skips it), leaving out those this run already failed on.
 */
export async function lockNextReleasable(
  tx: Tx,
  formats: readonly string[],
  skip: ReadonlySet<string>,
): Promise<HeldPackage | undefined> {
  const [row] = await tx.$queryRaw<HeldPackage[]>`
    SELECT "tenantId", "eventId", slug, format, envelope FROM "HeldPlayPackage"
     WHERE format = ANY(${[...formats]}::text[])
       AND NOT ("tenantId" || ':' || "eventId" = ANY(${[...skip]}::text[]))
     ORDER BY "heldAt", "eventId" LIMIT 1 FOR UPDATE SKIP LOCKED`;
  return row;
}

export async function releaseHeld(tx: Tx, held: { tenantId: string; eventId: string }): Promise<void> {
  await tx.heldPlayPackage.delete({ where: { tenantId_eventId: { tenantId: held.tenantId, eventId: held.eventId } } });
}

export async function noteReleaseFailed(tx: Tx, held: { tenantId: string; eventId: string }, error: string): Promise<void> {
  await tx.heldPlayPackage.update({
    where: { tenantId_eventId: { tenantId: held.tenantId, eventId: held.eventId } },
    data: { lastError: error },
  });
}

/** Held packages of the tenant that mention the user, locked, with the retention class of their course (or the tenant's). */
export async function lockHeldMentioning(
  tx: Tx,
  tenantId: string,
  userId: string,
): Promise<Array<{ eventId: string; envelope: unknown; retentionClass: string | null }>> {
  return tx.$queryRaw`
    SELECT h."eventId", h.envelope, COALESCE(c."retentionClass", t."retentionClass") AS "retentionClass"
      FROM "HeldPlayPackage" h
      LEFT JOIN "Course" c ON c."tenantId" = h."tenantId" AND c.slug = h.slug
      LEFT JOIN "TenantSettings" t ON t."tenantId" = h."tenantId"
     WHERE h."tenantId" = ${tenantId} AND strpos(h.envelope::text, ${userId}) > 0
     ORDER BY h."eventId" FOR UPDATE OF h`;
}

export async function replaceHeldEnvelope(tx: Tx, tenantId: string, eventId: string, envelope: unknown): Promise<void> {
  await tx.heldPlayPackage.update({
    where: { tenantId_eventId: { tenantId, eventId } },
    data: { envelope: envelope as Prisma.InputJsonValue },
  });
}
