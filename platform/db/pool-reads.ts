import pg from 'pg';
import { SpanKind, withSpan } from '../observability/telemetry.js';
import { utcTimestamp } from './utc-timestamp.logic.js';

/**
 * Reads on the pg pool under a Prisma client, past Prisma's runtime, for the few hot reads whose
 * cost per request Prisma dominates: the catalog's page read (listCourses) costs 99-198 µs of the
 * process's CPU through findMany and 44-56 µs as one named statement on the same pool, span
 * included (bench/catalog-read-cost.ts, bench/results/2026-11-29T0242-catalog-read-cost.md). Same pool, same connections and their settings (timeouts,
 * application_name), same database errors (platform/db/unreachable.ts reads node-postgres' own).
 *
 * Only the top-level client has reads here: a transaction's client (`Tx`) is not registered, so a
 * read that must see a transaction's writes cannot leave it by accident (poolReadsOf throws).
 */
export interface PoolReads {
  /**
   * The rows of one read-only statement: named (parsed and planned once per connection) unless
   * DB_PREPARED_STATEMENTS is off. `timestamp` columns come back as Prisma returns them: UTC.
   */
  rows<T>(statement: PoolRead, values: readonly unknown[]): Promise<T[]>;
}

/** A statement whose text never varies with its values (it may then be prepared once per connection). */
export interface PoolRead {
  name: string;
  text: string;
  /** Its span's name, as OpenTelemetry's database conventions have it: operation and table, e.g. `SELECT Course`. */
  summary: string;
}

const registered = new WeakMap<object, PoolReads>();

/** Called by createPrismaClient for the client it builds over `pool`. */
export function registerPoolReads(client: object, pool: pg.Pool, options: { named: boolean }): void {
  registered.set(client, {
    rows<T>(statement: PoolRead, values: readonly unknown[]): Promise<T[]> {
      // A client span as Prisma's queries have (prisma:client:db_query): the trace of a request
      // keeps its database step. The text only: values may carry a tenant's or a person's data.
      const attributes = {
        'db.system.name': 'postgresql',
        'db.query.summary': statement.summary,
        'db.query.text': statement.text,
      };
      return withSpan(
        statement.summary,
        attributes,
        async () => {
          const result = await pool.query({
            ...(options.named ? { name: statement.name } : {}),
            text: statement.text,
            values: [...values],
            types: PRISMA_TYPES,
          });
          return result.rows as T[];
        },
        { kind: SpanKind.CLIENT },
      );
    },
  });
}

/** The pool reads of a client made by createPrismaClient. */
export function poolReadsOf(client: object): PoolReads {
  const reads = registered.get(client);
  // A programming error, not a request's: every client of the system is made there.
  if (!reads) throw new Error('This read runs on the pool of a client made by createPrismaClient, not inside a transaction');
  return reads;
}

/**
 * A model's columns as Prisma's findMany returns them, from its generated field list (e.g.
 * `Prisma.CourseScalarFieldEnum`): a column added to the schema is read without a change here.
 */
export function columnList(scalarFields: Record<string, string>, table?: string): string {
  return Object.values(scalarFields)
    .map((column) => (table ? `${table}."${column}"` : `"${column}"`))
    .join(', ');
}

/** OID of `timestamp` (without time zone). */
const TIMESTAMP = 1114;

/**
 * Prisma stores DateTime as `timestamp(3)` (no zone) holding UTC; node-postgres reads such a value
 * in the process's local zone. Every other type reads as node-postgres does (jsonb parsed, text[]
 * as arrays, int4 as numbers), which is what Prisma returns for them too.
 */
const PRISMA_TYPES = {
  getTypeParser(oid: number, format?: string) {
    if (oid === TIMESTAMP) return utcTimestamp;
    return pg.types.getTypeParser(oid, format as 'text');
  },
} as pg.CustomTypesConfig;
