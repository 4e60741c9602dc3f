// `DATABASE_URL=... npx tsx bench/catalog-read-cost.ts`: the client CPU of the catalog's page read
// (`courses(first: 1)`: listCourses, the one statement of the gateway's one-field page) through
// Prisma's findMany (as it read before 2026-11-29), as listCourses reads it now (a named statement
// on the Prisma client's pool, platform/db/pool-reads.ts) and on a bare pg pool, 10 in flight. The catalog subgraph is shared by every gateway the gateway rows compare,
// so its cost per page is what bounds our gateway's lead (bench/README.md, 2026-11-29).
import { createPrismaClient } from '../platform/db/database.js';
import { listCourses } from '../subgraphs/catalog/course/course.repo.js';
import { BENCH_TENANT, seedCourses } from './seed.js';
import { cpuPerCallRounds, type CostTarget, freshDatabase, heading, table } from './lib.js';
import pg from 'pg';

const CALLS = Number(process.env.BENCH_STATEMENTS ?? 4000);
const IN_FLIGHT = 10;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const db = await freshDatabase(IN_FLIGHT);
await seedCourses(db.url, { courses: 200, otherTenants: true });
const prisma = createPrismaClient(db.url, IN_FLIGHT);
const pool = new pg.Pool({ connectionString: db.url, max: IN_FLIGHT });
const TEXT = 'SELECT * FROM "Course" WHERE "tenantId" = $1 ORDER BY id ASC LIMIT $2';
const targets: CostTarget[] = [
  {
    name: "Prisma's findMany (listCourses before)",
    run: () => prisma.course.findMany({ where: { tenantId: BENCH_TENANT }, orderBy: { id: 'asc' }, take: 2 }),
  },
  { name: 'listCourses (pool read, with its span)', run: () => listCourses(prisma, BENCH_TENANT, 1) },
  {
    name: 'bare pg pool.query (named)',
    run: () => pool.query({ name: 'bench_list_courses', text: TEXT, values: [BENCH_TENANT, 2] }),
  },
];

let rows: Array<Array<string | number>> = [];
try {
  rows = await cpuPerCallRounds(targets, { calls: CALLS, inFlight: IN_FLIGHT, rounds: ROUNDS });
} finally {
  await prisma.$disconnect();
  await pool.end();
  await db.close();
}
heading(`catalog page read: Prisma's findMany, the pool read and bare pg, ${IN_FLIGHT} in flight`);
console.log(table(['>round', 'client', '>reads', '>client CPU µs per read', '>wall ms'], rows));
