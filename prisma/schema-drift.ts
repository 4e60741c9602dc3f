import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import pg from 'pg';

/**
 * Proves that the database the SQL migrations produce is the one schema.prisma describes: every
 * model's table, every column with its type and nullability, every primary key, unique and plain
 * index, and every foreign key. Needed because `prisma migrate diff` (the usual drift check)
 * cannot run here; see design notes §3.
 */
export interface Shape {
  columns: string[];
  indexes: string[];
  foreignKeys: string[];
}

interface DmmfField {
  name: string;
  dbName?: string | null;
  kind: string;
  type: string;
  isList: boolean;
  isRequired: boolean;
  relationFromFields?: string[];
  relationToFields?: string[];
}
interface DmmfModel {
  name: string;
  dbName: string | null;
  fields: DmmfField[];
}
interface DmmfIndex {
  model: string;
  type: 'id' | 'unique' | 'normal' | 'fulltext';
  dbName?: string;
  fields: Array<{ name: string }>;
}

/** `("publishedAt" IS NULL)` and `"publishedAt" IS NULL` are one predicate. */
function normalizePredicate(predicate: string): string {
  let text = predicate.replace(/\s+/g, ' ').trim();
  while (text.startsWith('(') && text.endsWith(')')) text = text.slice(1, -1).trim();
  return text;
}

/**
 * The DMMF leaves out a partial index's `where: raw("...")` (preview feature partialIndexes), so
 * it is read from the schema text, by the index's `map` name.
 */
function partialIndexPredicates(schema: string): Map<string, string> {
  const predicates = new Map<string, string>();
  for (const line of schema.split('\n')) {
    const where = /where:\s*raw\("((?:[^"\\]|\\.)*)"\)/.exec(line);
    if (!line.includes('@@index(') || !where) continue;
    const map = /map:\s*"([^"]+)"/.exec(line);
    if (!map) throw new Error(`A partial index needs a map name so its predicate can be checked: ${line.trim()}`);
    predicates.set(map[1], normalizePredicate(where[1].replace(/\\"/g, '"')));
  }
  return predicates;
}

const PG_TYPES: Record<string, string> = {
  String: 'text',
  Int: 'integer',
  BigInt: 'bigint',
  Boolean: 'boolean',
  DateTime: 'timestamp(3) without time zone',
  Json: 'jsonb',
  Float: 'double precision',
  Decimal: 'numeric(65,30)',
  Bytes: 'bytea',
};

export async function expectedShape(schemaPath: string): Promise<Shape> {
  const require = createRequire(import.meta.url);
  const wasm = require('@prisma/prisma-schema-wasm') as { get_dmmf(params: string): string };
  const schema = await fs.readFile(schemaPath, 'utf8');
  const dmmf = JSON.parse(wasm.get_dmmf(JSON.stringify({ prismaSchema: [['schema.prisma', schema]] }))) as {
    datamodel: { models: DmmfModel[]; indexes: DmmfIndex[] };
  };
  const models = new Map(dmmf.datamodel.models.map((m) => [m.name, m]));
  const table = (model: DmmfModel) => model.dbName ?? model.name;
  const column = (model: DmmfModel, fieldName: string) => {
    const field = model.fields.find((f) => f.name === fieldName);
    return field?.dbName ?? fieldName;
  };
  const columns: string[] = [];
  const foreignKeys: string[] = [];
  for (const model of dmmf.datamodel.models) {
    for (const field of model.fields) {
      if (field.kind === 'object') {
        if (field.relationFromFields?.length) {
          const target = models.get(field.type)!;
          foreignKeys.push(
            `${table(model)}(${field.relationFromFields.map((f) => column(model, f)).join(',')}) -> ${table(target)}(${(field.relationToFields ?? []).map((f) => column(target, f)).join(',')})`,
          );
        }
        continue;
      }
      const base = field.kind === 'enum' ? field.type : (PG_TYPES[field.type] ?? field.type);
      const type = field.isList ? `${base}[]` : base;
      // Prisma creates list columns without NOT NULL, whatever the model says.
      const nullable = field.isList || !field.isRequired;
      columns.push(`${table(model)}.${field.dbName ?? field.name}: ${type}${nullable ? ' null' : ' not null'}`);
    }
  }
  const predicates = partialIndexPredicates(schema);
  const indexes = dmmf.datamodel.indexes.map((index) => {
    const model = models.get(index.model)!;
    const kind = index.type === 'id' ? 'primary' : index.type === 'unique' ? 'unique' : 'index';
    const predicate = index.dbName ? predicates.get(index.dbName) : undefined;
    return `${kind} ${table(model)}(${index.fields.map((f) => column(model, f.name)).join(',')})${predicate ? ` WHERE ${predicate}` : ''}`;
  });
  return { columns: columns.sort(), indexes: indexes.sort(), foreignKeys: foreignKeys.sort() };
}

export async function actualShape(databaseUrl: string): Promise<Shape> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const columns = await client.query<{ table_name: string; column_name: string; type: string; is_nullable: string }>(`
      SELECT c.table_name, c.column_name, c.is_nullable,
             format_type(a.atttypid, a.atttypmod) AS type
      FROM information_schema.columns c
      JOIN pg_class t ON t.relname = c.table_name
      JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = c.table_schema
      JOIN pg_attribute a ON a.attrelid = t.oid AND a.attname = c.column_name
      WHERE c.table_schema = current_schema() AND c.table_name <> '_prisma_migrations'`);
    const indexes = await client.query<{ kind: string; table_name: string; cols: string; predicate: string | null }>(`
      SELECT CASE WHEN i.indisprimary THEN 'primary' WHEN i.indisunique THEN 'unique' ELSE 'index' END AS kind,
             t.relname AS table_name,
             string_agg(a.attname, ',' ORDER BY k.ord) AS cols,
             pg_get_expr(i.indpred, i.indrelid) AS predicate
      FROM pg_index i
      JOIN pg_class t ON t.oid = i.indrelid
      JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = current_schema()
      CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
      JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
      WHERE t.relname <> '_prisma_migrations'
      GROUP BY i.indexrelid, i.indisprimary, i.indisunique, t.relname, i.indpred, i.indrelid`);
    const fks = await client.query<{ src: string; src_cols: string; dst: string; dst_cols: string }>(`
      SELECT src.relname AS src, dst.relname AS dst,
             (SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(c.conkey) WITH ORDINALITY k(attnum, ord)
                JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum) AS src_cols,
             (SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(c.confkey) WITH ORDINALITY k(attnum, ord)
                JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum) AS dst_cols
      FROM pg_constraint c
      JOIN pg_class src ON src.oid = c.conrelid
      JOIN pg_class dst ON dst.oid = c.confrelid
      JOIN pg_namespace n ON n.oid = src.relnamespace AND n.nspname = current_schema()
      WHERE c.contype = 'f'`);
    return {
      columns: columns.rows
        .map((r) => `${r.table_name}.${r.column_name}: ${r.type}${r.is_nullable === 'YES' ? ' null' : ' not null'}`)
        .sort(),
      indexes: indexes.rows
        .map((r) => `${r.kind} ${r.table_name}(${r.cols})${r.predicate ? ` WHERE ${normalizePredicate(r.predicate)}` : ''}`)
        .sort(),
      foreignKeys: fks.rows.map((r) => `${r.src}(${r.src_cols}) -> ${r.dst}(${r.dst_cols})`).sort(),
    };
  } finally {
    await client.end();
  }
}

/** Lines only in the schema (`+`) or only in the database (`-`); empty when they agree. */
export function diffShapes(expected: Shape, actual: Shape): string[] {
  const out: string[] = [];
  for (const key of ['columns', 'indexes', 'foreignKeys'] as const) {
    const a = new Set(actual[key]);
    const e = new Set(expected[key]);
    for (const line of expected[key]) if (!a.has(line)) out.push(`+ ${line}   (in schema.prisma, missing in the database)`);
    for (const line of actual[key]) if (!e.has(line)) out.push(`- ${line}   (in the database, not in schema.prisma)`);
  }
  return out;
}
