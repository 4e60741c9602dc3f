import { Prisma } from './database.js';
import { preparedMark } from './statement-name.logic.js';

/**
 * `sql` as a named prepared statement (when DB_PREPARED_STATEMENTS is on, the default). Prisma's pg
 * adapter sends every statement unnamed, so Postgres parses and plans it again each time: for
 * assist's one-statement record (three CTEs, two record sets) that was 0.37 of its 0.52 ms on the
 * server (bench/README.md). Named, pg parses it once per connection and then sends Bind/Execute.
 *
 * Mark only statements whose text does not vary with their values or row count: bulk-sql.ts's
 * record sets (one jsonb parameter for any number of rows) qualify, `IN (...)` lists do not.
 */
export function prepared(label: string, sql: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`${Prisma.raw(preparedMark(label))}${sql}`;
}
