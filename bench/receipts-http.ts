// Issue 36, item 7, through the whole door: assist throughput of the AI subgraph process with
// receipts against the same process without them (bench/ai-without-receipts.main.ts), in the same
// run, on one fresh database. Each request is what a caller sends: HTTP, a token, the GraphQL assist
// mutation and a fresh Idempotency-Key (the door refuses a mutation without one), so the record
// stage takes its keyed path. bench/receipts.ts measures the pipeline alone, the worst case.
//   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379 \
//     npx tsx bench/receipts-http.ts
// Variables: BENCH_ROUNDS (default 3), BENCH_DURATION_SECONDS (per measurement, 10),
// BENCH_RECEIPT_LEVELS (concurrent connections, "10,50"), BENCH_COMPARE_DIR (see below),
// BENCH_RECEIPT_REPLICAS (AI processes per target on the one database and tenant, the connections
// split between them: replicas that share a tenant's chain; default 1), BENCH_RECEIPT_TENANTS
// (`shared`, the default: every replica answers the one tenant; `own`: each replica its own tenant,
// the control that tells the chain's contention from the processes' competition for the cores).
import 'reflect-metadata';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { generateEd25519, mintToken } from '../platform/auth/dev-keys.js';
import { createTestDatabase } from '../test/support/database.js';
import { routeToMock, runLevel } from './assist.js';
import { cpuMs, f, freePort, machine, ROOT, spawnNode, table, type Proc } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DURATION = Number(process.env.BENCH_DURATION_SECONDS ?? 10);
const LEVELS = (process.env.BENCH_RECEIPT_LEVELS ?? '10,50').split(',').map(Number);
const TENANT = 'ten_01JDBENCH0000000000000000R';
const REPLICAS = Number(process.env.BENCH_RECEIPT_REPLICAS ?? 1);
const OWN_TENANTS = process.env.BENCH_RECEIPT_TENANTS === 'own';
/** The tenant replica `index` answers. */
const tenantOf = (index: number) => (OWN_TENANTS ? `${TENANT.slice(0, -1)}${'RSTUVWXYZ'[index]}` : TENANT);
/**
 * BENCH_COMPARE_DIR: another checkout's AI process, with its receipts, takes the place of "without
 * receipts" (a change's before and after in one run).
 */
const COMPARE_DIR = process.env.BENCH_COMPARE_DIR ? path.resolve(process.env.BENCH_COMPARE_DIR) : undefined;
type Target = 'ours' | 'other';
const TARGETS: Record<Target, { dir: string; entry: string; label: string }> = {
  ours: { dir: ROOT, entry: 'processes/ai.main.ts', label: 'with receipts' },
  other: COMPARE_DIR
    ? { dir: COMPARE_DIR, entry: 'processes/ai.main.ts', label: `with receipts at ${COMPARE_DIR}` }
    : { dir: ROOT, entry: 'bench/ai-without-receipts.main.ts', label: 'without receipts' },
};

const ASSIST = JSON.stringify({
  query: `mutation A($input: AssistInput!) { assist(input: $input) { provenanceId status timings { totalMs providerMs } } }`,
  variables: {
    input: {
      featureKey: 'portal.triage',
      variables: { message: 'I have had a headache for two days.' },
      context: { facilityId: 'fac-bench', specialty: 'general' },
    },
  },
});

interface Started {
  proc: Proc;
  base: string;
}

/** One AI process of a target on a free port, ready (bench/lib.ts spawnNode: BENCH_CPU_PROF_DIR, killed on exit). */
async function startTarget(
  { dir, entry }: { dir: string; entry: string },
  env: Record<string, string | undefined>,
  name: string,
): Promise<Started> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = await spawnNode(name, path.join(dir, entry), {
    cwd: dir,
    env: { ...env, AI_PORT: String(port) },
    readyUrl: `${base}/v1/ai/health`,
  });
  return { proc, base };
}

// Production mode, as deployed: it refuses to start without Redis and a configured token key.
if (!process.env.REDIS_URL)
  throw new Error('set REDIS_URL (e.g. redis://127.0.0.1:6379): the AI process runs in production mode');
const keys = await generateEd25519();
const database = await createTestDatabase('postgres');
const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-receipts-http-'));
const started: Partial<Record<Target, Started[]>> = {};
try {
  // On top of spawnNode's production environment; the mock provider answers, never a real one.
  const env: Record<string, string | undefined> = {
    DATABASE_URL: database.url,
    REDIS_URL: process.env.REDIS_URL,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'error',
    AI_ALLOW_MOCK_PROVIDER: 'true',
    AUTH_PUBLIC_KEY: JSON.stringify(keys.publicJwk),
    OPENAI_BASE_URL: undefined,
  };
  // One after the other: both seed the same baseline rows on start.
  for (const target of Object.keys(TARGETS) as Target[]) {
    started[target] = [];
    for (let replica = 0; replica < REPLICAS; replica++)
      started[target].push(
        await startTarget(TARGETS[target], env, `${path.basename(TARGETS[target].entry, '.ts')}-${target}-${replica + 1}`),
      );
  }
  const headersOf = async (tenantId: string) => ({
    'content-type': 'application/json',
    authorization: `Bearer ${await mintToken(keys.privateJwk, { sub: 'svc-bench', tid: tenantId, scope: 'ai.assist ai.admin', ttlSeconds: 900 })}`,
    'x-tenant-id': tenantId,
  });
  const replicaHeaders: Array<Record<string, string>> = [];
  for (let replica = 0; replica < REPLICAS; replica++) {
    replicaHeaders.push(await headersOf(tenantOf(replica)));
    if (replica === 0 || OWN_TENANTS) await routeToMock(started.ours![0]!.base, replicaHeaders[replica]!);
  }

  /** Every replica of the target at once, the connections split between them; their sums. */
  const measure = async (target: Target, connections: number, seconds: number) => {
    const replicas = started[target]!;
    const results = await Promise.all(
      replicas.map((replica, index) =>
        runLevel(
          `${replica.base}/graphql`,
          replicaHeaders[index]!,
          ASSIST,
          Math.max(1, Math.round(connections / replicas.length)),
          seconds,
        ),
      ),
    );
    const sum = (pick: (result: (typeof results)[number]) => number) =>
      results.reduce((total, result) => total + pick(result), 0);
    return {
      rps: sum((result) => result.rps),
      requests: sum((result) => result.requests),
      errors: sum((result) => result.errors),
    };
  };
  const pids = (target: Target) => started[target]!.map((replica) => replica.proc.pid);
  // Warm-up of both (JIT, pools, the signing key's provisioning).
  for (const target of Object.keys(TARGETS) as Target[]) await measure(target, 10, 5);
  const rows: string[][] = [];
  const ratios = new Map<number, number[]>();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const connections of LEVELS) {
      const order = (Object.keys(TARGETS) as Target[])[round % 2 === 1 ? 'slice' : 'reverse']();
      const rps: Partial<Record<Target, number>> = {};
      // CPU of the AI processes per answer (/proc): moves less than req/s on a shared machine.
      const cpu: Partial<Record<Target, number>> = {};
      for (const target of order) {
        await measure(target, connections, 2);
        const cpuBefore = cpuMs(pids(target));
        const result = await measure(target, connections, DURATION);
        if (result.errors > 0)
          throw new Error(`${TARGETS[target].label}: ${result.errors} failed requests at ${connections} connections`);
        rps[target] = result.rps;
        cpu[target] = (cpuMs(pids(target)) - cpuBefore) / Math.max(1, result.requests);
      }
      const ratio = rps.ours! / rps.other!;
      ratios.set(connections, [...(ratios.get(connections) ?? []), ratio]);
      rows.push([
        String(round),
        String(connections),
        f(rps.ours!, 0),
        f(rps.other!, 0),
        `${f((ratio - 1) * 100)} %`,
        f(cpu.ours!, 3),
        f(cpu.other!, 3),
      ]);
    }
  }
  const provenance = await database.prisma.aIProvenance.count();
  const receipts = await database.prisma.provenanceReceipt.count();
  console.log(machine());
  console.log(
    `\nGraphQL assist over HTTP with an Idempotency-Key each, mock provider; ${REPLICAS} AI process(es) per target on ${OWN_TENANTS ? 'a tenant each' : 'one tenant'}; ${DURATION} s per measurement after 2 s of warm-up, ${ROUNDS} rounds, order flipped every round; ${provenance} provenance rows, ${receipts} receipts\n`,
  );
  console.log(
    table(
      [
        'round',
        '>connections',
        `>${TARGETS.ours.label} req/s`,
        `>${TARGETS.other.label} req/s`,
        '>ratio',
        `>${TARGETS.ours.label} CPU ms/answer`,
        `>${TARGETS.other.label} CPU ms/answer`,
      ],
      rows,
    ),
  );
  for (const [connections, values] of ratios) {
    const median = [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    const verdict = COMPARE_DIR ? '' : ` (target: within 5 %, ${median >= 0.95 ? 'met' : 'missed'})`;
    console.log(`\n${connections} connections: median ${f((median - 1) * 100)} %${verdict}`);
  }
} finally {
  await Promise.all(Object.values(started).flatMap((replicas) => replicas.map((replica) => replica.proc.stop())));
  await database.close();
  await fs.rm(dataDir, { recursive: true, force: true });
}
