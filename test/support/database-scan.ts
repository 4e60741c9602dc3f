import { Prisma, type Db } from '../../platform/db/database.js';

/**
 * The rows of every table of the database (but `except`) holding one of `needles` anywhere, as
 * `[table, the row's JSON]`: a scan that no list of known columns limits, so a table or column
 * added later that keeps a copy is found too (the GDPR erasure tests).
 */
export async function rowsHolding(
  prisma: Db,
  needles: readonly string[],
  except: readonly string[] = [],
): Promise<Array<[string, string]>> {
  const tables = await prisma.$queryRaw<Array<{ name: string }>>`
    SELECT table_name AS name FROM information_schema.tables
     WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
       AND NOT (table_name = ANY(${[...except]}))`;
  const found: Array<[string, string]> = [];
  for (const { name } of tables) {
    const rows = await prisma.$queryRaw<Array<{ row: string }>>`
      SELECT row_to_json(t)::text AS row FROM ${Prisma.raw(`"${name.replaceAll('"', '""')}"`)} AS t
       WHERE ${Prisma.join(
         needles.map((needle) => Prisma.sql`strpos(row_to_json(t)::text, ${needle}) > 0`),
         ' OR ',
       )}`;
    for (const { row } of rows) found.push([name, row]);
  }
  return found;
}
