import type { Db, Prisma, Tx } from '../../../platform/db/database.js';
import type { Taxonomy } from '../../../prisma/generated/client.js';

export function findTaxonomiesByIds(db: Db | Tx, tenantId: string, ids: readonly string[]): Promise<Taxonomy[]> {
  return db.taxonomy.findMany({ where: { tenantId, id: { in: [...ids] } } });
}

/** Creates the namespace's taxonomy at version 0 unless it exists, then locks it. */
export async function lockOrCreateTaxonomy(tx: Tx, tenantId: string, namespace: string, newId: string): Promise<Taxonomy> {
  await tx.taxonomy.createMany({ data: [{ id: newId, tenantId, namespace, version: 0, nodes: [] }], skipDuplicates: true });
  const [{ id }] = await tx.$queryRaw<Array<{ id: string }>>`
    SELECT id FROM "Taxonomy" WHERE "tenantId" = ${tenantId} AND namespace = ${namespace} FOR UPDATE`;
  return tx.taxonomy.findUniqueOrThrow({ where: { id } });
}

export async function saveTaxonomyVersion(
  tx: Tx,
  taxonomy: Taxonomy,
  next: { version: number; nodes: Prisma.InputJsonValue; diff: Prisma.InputJsonValue; createdBy: string },
): Promise<Taxonomy> {
  await tx.taxonomyVersion.create({
    data: {
      taxonomyId: taxonomy.id,
      version: next.version,
      tenantId: taxonomy.tenantId,
      diff: next.diff,
      createdBy: next.createdBy,
    },
  });
  return tx.taxonomy.update({ where: { id: taxonomy.id }, data: { version: next.version, nodes: next.nodes } });
}
