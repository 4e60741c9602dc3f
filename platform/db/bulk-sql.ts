import { Prisma } from './database.js';

/**
 * One statement for many rows of a table (INSERT, UPDATE, a key list), built as parameterised SQL,
 * for the hot write paths.
 * Measured here (Postgres, 2 vCPU): three rows through Prisma's interactive transaction cost
 * 2.5–2.8 ms of client CPU, the same rows as one statement 0.4–0.5 ms (bench/README.md, assist).
 *
 * INSERT and UPDATE send their rows as ONE jsonb parameter that Postgres reads back as a typed
 * record set (`jsonb_to_recordset`): Prisma and pg handle every parameter in JavaScript, and a
 * batch of 300 rows × 16 columns as separate parameters cost the event worker more CPU than the
 * statement itself (bench/README.md, events). Key lists stay VALUES tuples: the planner sees their
 * row count and uses the indexes.
 */
export type ColumnType = 'text' | 'text[]' | 'int' | 'bigint' | 'bool' | 'jsonb' | 'timestamp';

export interface Column<R> {
  name: string;
  type: ColumnType;
  value: (row: R) => unknown;
}

/** The type each column is read as (a timestamp as an instant, converted below). */
const RECORD_TYPE: Record<ColumnType, string> = {
  text: 'text',
  'text[]': 'text[]',
  int: 'int',
  bigint: 'bigint',
  bool: 'boolean',
  jsonb: 'jsonb',
  timestamp: 'timestamptz',
};

/** A value as JSON the record set reads back exactly: bigints as strings, instants as ISO text. */
function jsonValue(type: ColumnType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (type === 'bigint') return String(value);
  if (type === 'timestamp') return (value as Date).toISOString();
  return value;
}

/** `v."column"` as its table column wants it. */
function readBack(column: { name: string; type: ColumnType }): string {
  // Prisma's DateTime columns are timestamp(3) holding UTC wall time; the instant converted
  // explicitly keeps that whatever the session's TimeZone.
  return column.type === 'timestamp' ? `(v."${column.name}" AT TIME ZONE 'UTC')` : `v."${column.name}"`;
}

/** `jsonb_to_recordset($1::jsonb) AS v(columns..., "ordinal" int)`: the rows, in order, as one parameter. */
function recordSet<R>(columns: readonly Column<R>[], rows: readonly R[]): Prisma.Sql {
  const records = rows.map((row, ordinal) => {
    const record: Record<string, unknown> = { ordinal };
    for (const column of columns) record[column.name] = jsonValue(column.type, column.value(row));
    return record;
  });
  const definitions = [...columns.map((c) => `"${c.name}" ${RECORD_TYPE[c.type]}`), '"ordinal" int'].join(', ');
  return Prisma.sql`jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS v(${Prisma.raw(definitions)})`;
}

export interface InsertOptions<R> {
  /** `WHERE onlyIf` on the rows (e.g. `EXISTS (SELECT 1 FROM effect)`): a sibling CTE decides what is written. */
  onlyIf?: Prisma.Sql;
  /** Columns of the record set that are not inserted, for `onlyIf` to read as `v."name"`. */
  readOnly?: readonly Column<R>[];
  /** A CTE of a batch may have no rows for this table; a lone statement without rows is a bug. */
  allowEmpty?: boolean;
}

/**
 * `INSERT INTO "table" (columns) SELECT ... FROM <rows> [WHERE onlyIf] ORDER BY ordinal`: rows keep
 * their order (sequence ids follow it), and `onlyIf` lets a sibling CTE decide what is written.
 */
export function insertSql<R>(
  table: string,
  columns: readonly Column<R>[],
  rows: readonly R[],
  options: InsertOptions<R> = {},
): Prisma.Sql {
  if (rows.length === 0 && !options.allowEmpty) throw new Error(`insertSql(${table}) needs at least one row`);
  const names = Prisma.raw(columns.map((c) => `"${c.name}"`).join(', '));
  const values = Prisma.raw(columns.map(readBack).join(', '));
  const where = options.onlyIf ? Prisma.sql`WHERE ${options.onlyIf}` : Prisma.empty;
  return Prisma.sql`INSERT INTO ${Prisma.raw(`"${table}"`)} (${names})
    SELECT ${values} FROM ${recordSet([...columns, ...(options.readOnly ?? [])], rows)} ${where} ORDER BY v."ordinal"`;
}

/** A row of one request in a statement written for several (a group commit), and the key it depends on. */
export interface Gated<R> {
  row: R;
  /** Written only if a sibling CTE wrote this key (its request's effect row); null: always written. */
  gate: string | null;
}

/**
 * `insertSql` for the rows of several requests in one statement: each row is written only when its
 * gate is null or among `gateKeys` (e.g. `SELECT key FROM effect`, the keys a sibling CTE wrote).
 */
export function gatedInsertSql<R>(
  table: string,
  columns: readonly Column<R>[],
  rows: readonly Gated<R>[],
  gateKeys: Prisma.Sql,
): Prisma.Sql {
  const gated: Column<Gated<R>>[] = columns.map((column) => ({ ...column, value: (gatedRow) => column.value(gatedRow.row) }));
  return insertSql(table, gated, rows, {
    onlyIf: Prisma.sql`(v."_gate" IS NULL OR v."_gate" IN (${gateKeys}))`,
    readOnly: [{ name: '_gate', type: 'text', value: (gatedRow) => gatedRow.gate }],
    allowEmpty: true,
  });
}

/**
 * `UPDATE "table" SET column = v.column, ... FROM <rows> WHERE "table".key = v.key`: each row gives
 * the new values of its own table row (the first column is the key, never updated).
 */
export function updateSql<R>(table: string, columns: readonly Column<R>[], rows: readonly R[]): Prisma.Sql {
  if (rows.length === 0) throw new Error(`updateSql(${table}) needs at least one row`);
  const [key, ...set] = columns;
  const assignments = Prisma.raw(set.map((c) => `"${c.name}" = ${readBack(c)}`).join(', '));
  return Prisma.sql`UPDATE ${Prisma.raw(`"${table}"`)} AS t SET ${assignments}
    FROM ${recordSet(columns, rows)} WHERE ${Prisma.raw(`t."${key.name}" = v."${key.name}"`)}`;
}

/** `(a, b), (c, d)`: text key tuples of the rows, e.g. for `WHERE (x, y) IN (VALUES ...)`. */
export function keyTuplesSql<R>(rows: readonly R[], ...keys: ReadonlyArray<(row: R) => string>): Prisma.Sql {
  return Prisma.join(
    rows.map(
      (row) =>
        Prisma.sql`(${Prisma.join(
          keys.map((key) => Prisma.sql`${key(row)}::text`),
          ', ',
        )})`,
    ),
    ', ',
  );
}
