// Issue 36, item 7, through the whole door: assist throughput of the AI subgraph process with
// receipts against the same process without them (bench/ai-without-receipts.main.ts), in the same
// run, on one fresh database. Each request is what a caller sends: HTTP, a token, the GraphQL assist
// mutation and a fresh Idempotency-Key (the door refuses a mutation without one), so the record
// stage takes its keyed path. bench/receipts.ts measures the pipeline alone, the worst case.
//   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379 \
//     npx tsx bench/receipts-http.ts
// Variables: BENCH_ROUNDS (default 3), BENCH_DURATION_SECONDS (per measurement, 10),
// BENCH_RECEIPT_LEVELS (concurrent connections, "10,50"), BENCH_RECEIPT_TARGETS (which processes, in
// order, each compared with the last: `with` receipts, the signature `floor` of bench/receipt-floor.ts,
// `without` receipts; default "with,without"), BENCH_COMPARE_DIR (see below),
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
interface Target {
  dir: string;
  entry: string;
  label: string;
}
/** Every target this bench knows by name; BENCH_RECEIPT_TARGETS picks and orders them. */
const KNOWN_TARGETS: Record<string, Target> = {
  with: { dir: ROOT, entry: 'processes/ai.main.ts', label: 'with receipts' },
  // Each answer's claims signed and nothing written (bench/receipt-floor.ts): what any receipt costs at least.
  floor: { dir: ROOT, entry: 'bench/ai-receipt-floor.main.ts', label: 'signature floor' },
  without: COMPARE_DIR
    ? { dir: COMPARE_DIR, entry: 'processes/ai.main.ts', label: `with receipts at ${COMPARE_DIR}` }
    : { dir: ROOT, entry: 'bench/ai-without-receipts.main.ts', label: 'without receipts' },
};
/** The targets measured, in order; each is compared with the last, the baseline. */
const TARGETS: readonly Target[] = (process.env.BENCH_RECEIPT_TARGETS ?? 'with,without').split(',').map((name) => {
  const target = KNOWN_TARGETS[name.trim()];
  if (!target) throw new Error(`BENCH_RECEIPT_TARGETS: unknown target ${name} (known: ${Object.keys(KNOWN_TARGETS).join(', ')})`);
  return target;
});
if (TARGETS.length < 2) throw new Error('BENCH_RECEIPT_TARGETS names at least two targets');
const BASELINE = TARGETS.length - 1;

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
/** Per target (its index in TARGETS), its replicas. */
const started: Started[][] = [];
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
  // One after the other: each seeds the same baseline rows on start.
  for (const [index, target] of TARGETS.entries()) {
    const replicas: Started[] = [];
    started.push(replicas);
    for (let replica = 0; replica < REPLICAS; replica++)
      replicas.push(await startTarget(target, env, `${path.basename(target.entry, '.ts')}-${index + 1}-${replica + 1}`));
  }
  const headersOf = async (tenantId: string) => ({
    'content-type': 'application/json',
    authorization: `Bearer ${await mintToken(keys.privateJwk, { sub: 'svc-bench', tid: tenantId, scope: 'ai.assist ai.admin', ttlSeconds: 900 })}`,
    'x-tenant-id': tenantId,
  });
  const replicaHeaders: Array<Record<string, string>> = [];
  for (let replica = 0; replica < REPLICAS; replica++) {
    replicaHeaders.push(await headersOf(tenantOf(replica)));
    if (replica === 0 || OWN_TENANTS) await routeToMock(started[0]![0]!.base, replicaHeaders[replica]!);
  }

  /** Every replica of the target at once, the connections split between them; their sums. */
  const measure = async (target: number, connections: number, seconds: number) => {
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
  const pids = (target: number) => started[target]!.map((replica) => replica.proc.pid);
  // Warm-up of every target (JIT, pools, the signing key's provisioning).
  for (const index of TARGETS.keys()) await measure(index, 10, 5);
  const rows: string[][] = [];
  /** Per connection level, per round, each target's req/s over the baseline's. */
  const ratios = new Map<number, number[][]>();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const connections of LEVELS) {
      const order = [...TARGETS.keys()][round % 2 === 1 ? 'slice' : 'reverse']();
      const rps: number[] = [];
      // CPU of the AI processes per answer (/proc): moves less than req/s on a shared machine.
      const cpu: number[] = [];
      for (const target of order) {
        await measure(target, connections, 2);
        const cpuBefore = cpuMs(pids(target));
        const result = await measure(target, connections, DURATION);
        if (result.errors > 0)
          throw new Error(`${TARGETS[target]!.label}: ${result.errors} failed requests at ${connections} connections`);
        rps[target] = result.rps;
        cpu[target] = (cpuMs(pids(target)) - cpuBefore) / Math.max(1, result.requests);
      }
      const compared = TARGETS.map((_, index) => rps[index]! / rps[BASELINE]!).slice(0, BASELINE);
      ratios.set(connections, [...(ratios.get(connections) ?? []), compared]);
      rows.push([
        String(round),
        String(connections),
        ...rps.map((value) => f(value, 0)),
        ...compared.map((ratio) => `${f((ratio - 1) * 100)} %`),
        ...cpu.map((value) => f(value, 3)),
      ]);
    }
  }
  const provenance = await database.prisma.aIProvenance.count();
  const receipts = await database.prisma.provenanceReceipt.count();
  console.log(machine());
  console.log(
    `\nGraphQL assist over HTTP with an Idempotency-Key each, mock provider; ${REPLICAS} AI process(es) per target on ${OWN_TENANTS ? 'a tenant each' : 'one tenant'}; ${DURATION} s per measurement after 2 s of warm-up, ${ROUNDS} rounds, order flipped every round; ${provenance} provenance rows, ${receipts} receipts\n`,
  );
  const baseline = TARGETS[BASELINE]!.label;
  console.log(
    table(
      [
        'round',
        '>connections',
        ...TARGETS.map((target) => `>${target.label} req/s`),
        ...TARGETS.slice(0, BASELINE).map((target) => `>${target.label} vs ${baseline}`),
        ...TARGETS.map((target) => `>${target.label} CPU ms/answer`),
      ],
      rows,
    ),
  );
  for (const [connections, rounds] of ratios) {
    for (const [index, target] of TARGETS.slice(0, BASELINE).entries()) {
      const values = rounds.map((compared) => compared[index]!).sort((a, b) => a - b);
      const median = values[Math.floor(values.length / 2)]!;
      const verdict =
        target === KNOWN_TARGETS.with && baseline === 'without receipts'
          ? ` (target: within 5 %, ${median >= 0.95 ? 'met' : 'missed'})`
          : '';
      console.log(`\n${connections} connections, ${target.label} vs ${baseline}: median ${f((median - 1) * 100)} %${verdict}`);
    }
  }
} finally {
  await Promise.all(started.flatMap((replicas) => replicas.map((replica) => replica.proc.stop())));
  await database.close();
  await fs.rm(dataDir, { recursive: true, force: true });
}
