// `npx tsx bench/assist-ab.ts`: our POST /v1/ai/assist from two (or more) checkouts of this
// repository side by side — the code before a change and after it — each on its own fresh database,
// in front of the same fake upstream, alternating run by run (the order flips every round), with
// Portkey's gateway (bench/peers) in the same rotation for the ratio the issue asks about. Besides
// req/s it reads the CPU each of our processes and its Postgres backends spent per answer from
// /proc, which moves less than req/s on a shared machine. After each of our runs it checks that
// every answer was recorded (provenance, audit, keyed effect, quota), as assist-peer does.
//
//   BENCH_AB_DIRS     label=dir,label=dir  roots of the checkouts (node_modules and, with
//                     BENCH_OURS_BUILT=1, dist/ in each); default: this checkout alone; label=dir=entry starts another
//                     entry of that checkout (e.g. bench/system-without-receipts.main.ts: the cost of
//                     receipts through the whole system)
//   BENCH_AB_PORTKEY  0 leaves Portkey out (e.g. for a profile of ours alone)
//   BENCH_ASSIST_PEER_CONNECTIONS, BENCH_ROUNDS, BENCH_DURATION_SECONDS, BENCH_CPU_PROF_DIR as for assist-peer
import path from 'node:path';
import type autocannon from 'autocannon';
import { Redis } from 'ioredis';
import pg from 'pg';
import { newUlid } from '../platform/ids.js';
import { startFakeUpstream, startOurs } from './assist-ours.js';
import { countRecords, recordCheck } from './assist-peer.js';
import {
  DURATION,
  LOAD_HEADERS,
  PEERS,
  PORTKEY_BIN,
  PREWARM,
  ROOT,
  ROUNDS,
  benchKeys,
  cpuMs,
  ensurePeers,
  f,
  freshDatabase,
  heading,
  loadResultRow,
  machine,
  measure,
  probe,
  spawnNode,
  table,
  type LoadResult,
  type Proc,
} from './lib.js';

const PORTKEY_URL = 'http://127.0.0.1:8787';
const MESSAGE = 'I have had a headache for two days.';

interface Variant {
  label: string;
  dir: string;
  tenant: string;
  url: string;
  proc: Proc;
  stop(): Promise<void>;
  db: Awaited<ReturnType<typeof freshDatabase>>;
  token: string;
}

interface Row extends LoadResult {
  round: number;
  target: string;
  oursCpuMs?: number;
  pgCpuMs?: number;
}

/** The CPU of every Postgres backend connected to the database now. */
async function backendsCpuMs(admin: pg.Client, database: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]);
  return new Map(rows.map((row) => [row.pid, cpuMs([row.pid])]));
}

function cpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, ms] of after) sum += ms - (before.get(pid) ?? 0);
  return sum;
}

async function startVariant(
  { label, dir, entry }: { label: string; dir: string; entry?: string },
  index: number,
  shared: { upstream: string; keys: Awaited<ReturnType<typeof benchKeys>> },
): Promise<Variant> {
  const tenant = `ten_01JDBENCHAB00000000000000${String.fromCharCode(65 + index)}`;
  const db = await freshDatabase();
  const ours = await startOurs({
    name: `ours-${label}`,
    dir,
    entry,
    db,
    keys: shared.keys,
    upstream: shared.upstream,
    tenant,
    env: process.env.BENCH_AB_ENV ? (JSON.parse(process.env.BENCH_AB_ENV) as Record<string, string>) : {},
  });
  return {
    label,
    dir,
    tenant,
    url: `${ours.base}/v1/ai/assist`,
    proc: ours.proc,
    stop: ours.stop,
    db,
    token: await shared.keys.token(tenant, 'ai.assist'),
  };
}

const ASSIST_BODY = JSON.stringify({
  featureKey: 'portal.triage',
  variables: { locale: 'en', message: MESSAGE },
  context: { facilityId: 'fac-bench', specialty: 'general' },
});

const oursHeaders = (variant: Variant): Record<string, string> => ({
  'content-type': 'application/json',
  authorization: `Bearer ${variant.token}`,
  'x-tenant-id': variant.tenant,
});

function oursRequests(variant: Variant): autocannon.Request[] {
  return [
    {
      method: 'POST',
      headers: oursHeaders(variant),
      body: ASSIST_BODY,
      // Every request is a new write: a fresh Idempotency-Key each time.
      setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'idempotency-key': newUlid() } }),
    },
  ];
}

export async function run(): Promise<void> {
  const redisUrl = process.env.REDIS_URL;
  if (!redisUrl) throw new Error('assist-ab measures the quota in Redis: set REDIS_URL');
  const withPortkey = process.env.BENCH_AB_PORTKEY !== '0';
  if (withPortkey) ensurePeers();
  const levels = (process.env.BENCH_ASSIST_PEER_CONNECTIONS ?? '10,50').split(',').map(Number);
  const dirs = (process.env.BENCH_AB_DIRS ?? `this=${ROOT}`).split(',').map((entry) => {
    const [label, dir, start] = entry.split('=');
    return { label: label!, dir: path.resolve(dir!), entry: start };
  });
  const keys = await benchKeys();
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  const procs: Proc[] = [];
  const variants: Variant[] = [];
  try {
    const fake = await startFakeUpstream();
    procs.push(fake.proc);
    const upstream = fake.url;
    for (const [index, checkout] of dirs.entries()) {
      variants.push(await startVariant(checkout, index, { upstream, keys }));
    }
    const portkeyHeaders = {
      'content-type': 'application/json',
      authorization: 'Bearer sk-bench',
      'x-portkey-provider': 'openai',
      'x-portkey-custom-host': upstream,
    };
    const portkeyBody = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: MESSAGE }] });
    if (withPortkey) procs.push(await spawnNode('portkey', PORTKEY_BIN, { tsx: false, cwd: PEERS, readyUrl: `${PORTKEY_URL}/` }));

    for (const variant of variants) {
      await probe(
        variant.url,
        { method: 'POST', headers: { ...oursHeaders(variant), 'idempotency-key': newUlid() }, body: ASSIST_BODY },
        (status, body) => {
          const answer = body as { status?: string; provider?: string };
          return status === 200 && answer.status === 'completed' && answer.provider === 'openai-compatible'
            ? undefined
            : 'not a completed answer of the openai-compatible provider';
        },
      );
      await measure(`prewarm ${variant.label}`, {
        url: variant.url,
        requests: oursRequests(variant),
        connections: 10,
        warmup: 0,
        duration: PREWARM,
      });
    }
    const portkeyTarget = {
      url: `${PORTKEY_URL}/v1/chat/completions`,
      method: 'POST' as const,
      headers: portkeyHeaders,
      body: portkeyBody,
    };
    if (withPortkey) await measure('prewarm portkey', { ...portkeyTarget, connections: 10, warmup: 0, duration: PREWARM });

    const rows: Row[] = [];
    const checks: string[] = [];
    const targets = [...variants.map((v) => v.label), ...(withPortkey ? ['portkey'] : [])];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const connections of levels) {
        const order = round % 2 === 1 ? targets : [...targets].reverse();
        for (const target of order) {
          const variant = variants.find((v) => v.label === target);
          if (!variant) {
            rows.push({ ...(await measure("Portkey's gateway", { ...portkeyTarget, connections })), round, target });
            continue;
          }
          const load = { url: variant.url, requests: oursRequests(variant), connections };
          await measure(variant.label, { ...load, duration: 2, warmup: 0 });
          const database = new URL(variant.db.url).pathname.slice(1);
          const before = await countRecords(variant.db.prisma, redis, variant.tenant);
          const [oursBefore, pgBefore] = [cpuMs([variant.proc.pid]), await backendsCpuMs(admin, database)];
          const result = await measure(`ours: ${variant.label}`, { ...load, warmup: 0 });
          const [oursAfter, pgAfter] = [cpuMs([variant.proc.pid]), await backendsCpuMs(admin, database)];
          const after = await countRecords(variant.db.prisma, redis, variant.tenant);
          const answered = result.requests - result.errors;
          checks.push(`${variant.label}: ${recordCheck(round, connections, answered, before, after)}`);
          rows.push({
            ...result,
            round,
            target,
            oursCpuMs: (oursAfter - oursBefore) / Math.max(1, result.requests),
            pgCpuMs: cpuDelta(pgBefore, pgAfter) / Math.max(1, result.requests),
          });
        }
      }
    }

    heading(`assist A/B (${targets.join(' / ')}), same fake upstream, ${DURATION} s per run`);
    console.log(
      table(
        ['>round', ...LOAD_HEADERS, '>ours CPU ms/answer', '>its Postgres CPU ms/answer', 'load 1m'],
        rows.map((r) => [
          r.round,
          ...loadResultRow(r, [
            r.oursCpuMs === undefined ? '' : f(r.oursCpuMs, 3),
            r.pgCpuMs === undefined ? '' : f(r.pgCpuMs, 3),
          ]),
        ]),
      ),
    );
    console.log('\nEvery answer recorded:\n');
    console.log(checks.join('\n'));
    const ratios: Array<Array<string | number>> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const connections of levels) {
        const pick = (target: string) =>
          rows.find((r) => r.round === round && r.connections === connections && r.target === target);
        const base = pick(variants[0]!.label)!;
        const portkey = pick('portkey');
        for (const variant of variants) {
          const row = pick(variant.label)!;
          ratios.push([round, connections, variant.label, f(row.rps / base.rps, 2), portkey ? f(row.rps / portkey.rps, 2) : '-']);
        }
      }
    }
    console.log('\nRatios within each round:\n');
    console.log(table(['>round', '>conns', 'ours', `>req/s / ${variants[0]!.label}`, '>req/s / Portkey'], ratios));
  } finally {
    for (const variant of variants) await variant.stop();
    for (const proc of procs.reverse()) await proc.stop();
    for (const variant of variants) await variant.db.close();
    redis.disconnect();
    await admin.end();
  }
}

console.log(`# assist A/B ${new Date().toISOString()}\n\n${machine()}`);
await run();
process.exit(0);
