// `DATABASE_URL=... npx tsx bench/subgraph-execution-cost.ts`: CPU per request of the catalog
// subgraph running its queries compiled (SUBGRAPH_EXECUTION=compiled, graphql-jit) and interpreted
// (graphql-js), two servers in this process on one database, 10 requests in flight over loopback
// HTTP. The process's CPU holds the client's cost too, the same for both; the difference is the
// execution's. Documents: REST-compat's page of 20 courses (rest-list) and the `_entities` fetch a
// nested gateway page makes for 50 courses with their versions (gateway nested).
import 'reflect-metadata';
import { generateEd25519, mintToken } from '../platform/auth/dev-keys.js';
import { createTokenVerifier } from '../platform/auth/verifier.js';
import { createPrismaClient } from '../platform/db/database.js';
import { silentLogger } from '../platform/observability/logger.js';
import { loadSystemConfig } from '../processes/config.js';
import { COURSES } from '../rest-compat/documents.js';
import { startCatalogSubgraph } from '../subgraphs/catalog/server.js';
import { cpuPerCallRounds, type CostTarget, freshDatabase, heading, table } from './lib.js';
import { BENCH_TENANT, courseId, seedCourses } from './seed.js';

const CALLS = Number(process.env.BENCH_STATEMENTS ?? 3000);
const IN_FLIGHT = 10;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const ENTITIES = `query($representations: [_Any!]!) { _entities(representations: $representations) {
  ... on Course { courseId slug versions { courseVersionId versionLabel durationMinutes locales becameLatest } } } }`;
const representations = Array.from({ length: 50 }, (_, i) => ({ __typename: 'Course', courseId: courseId(i + 1) }));

const db = await freshDatabase(IN_FLIGHT);
await seedCourses(db.url, { courses: 1_000, versionsPerCourse: 1 });
const prisma = createPrismaClient(db.url, IN_FLIGHT);
const keys = await generateEd25519();
const verifier = await createTokenVerifier({
  publicKey: JSON.stringify(keys.publicJwk),
  maxTokenLifetimeSeconds: 900,
  clockToleranceSeconds: 5,
});
const token = await mintToken(keys.privateJwk, { sub: 'svc:bench', tid: BENCH_TENANT, scope: 'catalog.read' });
const servers = await Promise.all(
  (['compiled', 'graphql-js'] as const).map(async (execution) => ({
    execution,
    server: await startCatalogSubgraph(
      {
        config: { ...loadSystemConfig({ SUBGRAPH_EXECUTION: execution }), host: '127.0.0.1' },
        db: prisma,
        verifier,
        logger: silentLogger,
      },
      0,
    ),
  })),
);

function post(url: string, body: string): () => Promise<unknown> {
  return async () => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-tenant-id': BENCH_TENANT },
      body,
    });
    const text = await response.text();
    if (response.status !== 200 || text.includes('"errors"')) throw new Error(`unexpected answer: ${text.slice(0, 200)}`);
    return text;
  };
}

const documents = [
  { name: 'REST page (20 courses)', body: JSON.stringify({ query: COURSES, variables: { first: 20 } }) },
  { name: '_entities (50 courses with versions)', body: JSON.stringify({ query: ENTITIES, variables: { representations } }) },
];
const targets: CostTarget[] = documents.flatMap((document) =>
  servers.map(({ execution, server }) => ({ name: `${document.name}, ${execution}`, run: post(server.url, document.body) })),
);

let rows: Array<Array<string | number>> = [];
try {
  for (const target of targets) await target.run(0); // each document compiled, the pools connected
  rows = await cpuPerCallRounds(targets, { calls: CALLS, inFlight: IN_FLIGHT, rounds: ROUNDS });
} finally {
  for (const { server } of servers) await server.close();
  await prisma.$disconnect();
  await db.close();
}
heading(`catalog subgraph: compiled against interpreted execution, ${IN_FLIGHT} requests in flight`);
console.log(table(['>round', 'document, execution', '>requests', '>process CPU µs per request', '>wall ms'], rows));
