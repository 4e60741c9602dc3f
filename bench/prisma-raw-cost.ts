// `DATABASE_URL=... npx tsx bench/prisma-raw-cost.ts`: the client CPU of one raw statement through
// Prisma's `$queryRaw` (the pg adapter, a named prepared statement, as assist's hot statements run)
// against the same statement on a bare `pg` pool, 10 in flight. The statement reads a three-row
// jsonb record set, the shape of bulk-sql.ts's writes. The difference is what moving a hot
// statement off Prisma would save per execution (bench/README.md, 2026-11-28, fifth).
import pg from 'pg';
import { createPrismaClient, Prisma } from '../platform/db/database.js';
import { prepared } from '../platform/db/prepared.js';
import { cpuPerCallRounds, type CostTarget, heading, table } from './lib.js';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL is required (bench/README.md)');
const STATEMENTS = Number(process.env.BENCH_STATEMENTS ?? 4000);
const IN_FLIGHT = 10;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const records = JSON.stringify(Array.from({ length: 3 }, (_, ordinal) => ({ ordinal, a: 'x'.repeat(400), b: ordinal })));
const TEXT = 'SELECT count(*)::int AS n FROM jsonb_to_recordset($1::jsonb) AS v(ordinal int, a text, b int) WHERE $2::int >= 0';

const prisma = createPrismaClient(url, IN_FLIGHT);
const pool = new pg.Pool({ connectionString: url, max: IN_FLIGHT });
const targets: CostTarget[] = [
  {
    name: "Prisma's $queryRaw (pg adapter, prepared)",
    run: (i) =>
      prisma.$queryRaw(
        prepared(
          'bench_raw_cost',
          Prisma.sql`SELECT count(*)::int AS n FROM jsonb_to_recordset(${records}::jsonb) AS v(ordinal int, a text, b int) WHERE ${i}::int >= 0`,
        ),
      ),
  },
  { name: 'pg pool.query (named)', run: (i) => pool.query({ name: 'bench_raw_cost_pg', text: TEXT, values: [records, i] }) },
];

let rows: Array<Array<string | number>> = [];
try {
  rows = await cpuPerCallRounds(targets, { calls: STATEMENTS, inFlight: IN_FLIGHT, rounds: ROUNDS });
} finally {
  await prisma.$disconnect();
  await pool.end();
}
heading(`raw statement cost: Prisma's $queryRaw against bare pg, ${IN_FLIGHT} in flight`);
console.log(table(['>round', 'client', '>statements', '>client CPU µs per statement', '>wall ms'], rows));
