import type { Db } from '../../../platform/db/database.js';
import type { Taxonomy } from '../../../prisma/generated/client.js';

export function findTaxonomiesByIds(db: Db, tenantId: string, ids: readonly string[]): Promise<Taxonomy[]> {
  return db.taxonomy.findMany({ where: { tenantId, id: { in: [...ids] } } });
}
