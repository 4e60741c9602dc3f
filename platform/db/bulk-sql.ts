import { Prisma } from './database.js';

/**
 * One statement for many rows of a table (INSERT, UPDATE, a key list), built as parameterised SQL,
 * for the hot write paths.
 * Measured here (Postgres, 2 vCPU): three rows through Prisma's interactive transaction cost
 * 2.5–2.8 ms of client CPU, the same rows as one statement 0.4–0.5 ms (bench/README.md, assist).
 * Every value is cast to its column's type, so the statement also works as `INSERT ... SELECT`
 * (a condition on another CTE, ordinal order) where Postgres cannot infer parameter types.
 */
export type ColumnType = 'text' | 'text[]' | 'int' | 'bigint' | 'bool' | 'jsonb' | 'timestamp';

export interface Column<R> {
  name: string;
  type: ColumnType;
  value: (row: R) => unknown;
}

const SQL_TYPE: Record<ColumnType, string> = {
  text: 'text',
  'text[]': 'text[]',
  int: 'int',
  bigint: 'bigint',
  bool: 'boolean',
  jsonb: 'jsonb',
  timestamp: 'timestamp(3)',
};

function typed(type: ColumnType, value: unknown): Prisma.Sql {
  // A NULL keeps its type too: a VALUES column of untyped NULLs would be text.
  if (value === null || value === undefined) return Prisma.raw(`NULL::${SQL_TYPE[type]}`);
  switch (type) {
    case 'text':
      return Prisma.sql`${value}::text`;
    case 'text[]':
      return Prisma.sql`${value}::text[]`;
    case 'int':
      return Prisma.sql`${value}::int`;
    case 'bigint':
      return Prisma.sql`${String(value)}::bigint`;
    case 'bool':
      return Prisma.sql`${value}::boolean`;
    case 'jsonb':
      return Prisma.sql`${JSON.stringify(value)}::jsonb`;
    case 'timestamp':
      // Prisma's DateTime columns are timestamp(3) holding UTC wall time; an ISO instant converted
      // explicitly keeps that whatever the session's TimeZone.
      return Prisma.sql`(${(value as Date).toISOString()}::timestamptz AT TIME ZONE 'UTC')`;
  }
}

/**
 * `INSERT INTO "table" (columns) SELECT columns FROM (VALUES ...) [WHERE onlyIf] ORDER BY ordinal`:
 * rows keep their order (sequence ids follow it), and `onlyIf` (e.g. `EXISTS (SELECT 1 FROM effect)`)
 * lets a sibling CTE decide whether anything is written.
 */
export function insertSql<R>(table: string, columns: readonly Column<R>[], rows: readonly R[], onlyIf?: Prisma.Sql): Prisma.Sql {
  if (rows.length === 0) throw new Error(`insertSql(${table}) needs at least one row`);
  const names = columnNames(columns);
  const values = valuesSql(columns, rows, true);
  const where = onlyIf ? Prisma.sql`WHERE ${onlyIf}` : Prisma.empty;
  return Prisma.sql`INSERT INTO ${Prisma.raw(`"${table}"`)} (${names})
    SELECT ${names} FROM (VALUES ${values}) AS v(${names}, "ordinal") ${where} ORDER BY "ordinal"`;
}

/**
 * `UPDATE "table" SET column = v.column, ... FROM (VALUES ...) WHERE "table".key = v.key`: each row
 * gives the new values of its own table row (the first column is the key, never updated).
 */
export function updateSql<R>(table: string, columns: readonly Column<R>[], rows: readonly R[]): Prisma.Sql {
  if (rows.length === 0) throw new Error(`updateSql(${table}) needs at least one row`);
  const [key, ...set] = columns;
  const assignments = Prisma.raw(set.map((c) => `"${c.name}" = v."${c.name}"`).join(', '));
  return Prisma.sql`UPDATE ${Prisma.raw(`"${table}"`)} AS t SET ${assignments}
    FROM (VALUES ${valuesSql(columns, rows, false)}) AS v(${columnNames(columns)})
    WHERE ${Prisma.raw(`t."${key.name}" = v."${key.name}"`)}`;
}

/** `(a, b), (c, d)`: typed tuples, e.g. for `WHERE (x, y) IN (VALUES ...)`. */
export function valuesSql<R>(columns: readonly Column<R>[], rows: readonly R[], withOrdinal = false): Prisma.Sql {
  return Prisma.join(
    rows.map((row, ordinal) => {
      const cells = columns.map((c) => typed(c.type, c.value(row)));
      return Prisma.sql`(${Prisma.join(withOrdinal ? [...cells, Prisma.sql`${ordinal}::int`] : cells, ', ')})`;
    }),
    ', ',
  );
}

function columnNames<R>(columns: readonly Column<R>[]): Prisma.Sql {
  return Prisma.raw(columns.map((c) => `"${c.name}"`).join(', '));
}
