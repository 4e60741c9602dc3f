// `npm run bench -- assist-peer`: our POST /v1/ai/assist (the whole system as `npm start` runs it,
// in production mode on Postgres, Redis and NATS, the openai-compatible provider) against Portkey's open-source AI gateway
// (@portkey-ai/gateway, from bench/peers), both in front of the same fake OpenAI-compatible upstream
// on loopback (bench/fake-openai.ts, answers in ~0.1 ms). Alternating, 1 / 10 / 50 connections.
//
// Ours does more per answer than a pass-through: a provenance row, an audit outbox row and a keyed
// effect row in Postgres, the Idempotency-Key record and the tenant quota in Redis. After each of
// our runs the bench checks that every answer left all of them (row deltas = answers).
//
// The limit (bench/bare-assist.ts): a bare node:http server doing only the same Redis quota call,
// the same upstream call and one INSERT per request, on the same Postgres and Redis. A layer row
// (bench/bare-pipeline.ts): our assist pipeline itself behind a bare node:http server, without the
// front door and the GraphQL execution above it (one since the REST route runs on the AI subgraph in
// process; two before): the most a restructuring of those could give.
import { pathToFileURL } from 'node:url';
import type autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { newUlid } from '../platform/ids.js';
import { startFakeUpstream, startOurs } from './assist-ours.js';
import {
  DURATION,
  LOAD_HEADERS,
  PEERS,
  PORTKEY_BIN,
  PREWARM,
  ROUNDS,
  benchKeys,
  ensurePeers,
  f,
  freePort,
  freshDatabase,
  heading,
  loadResultRow,
  measure,
  probe,
  spawnNode,
  table,
  type LoadResult,
  type Proc,
} from './lib.js';

const TENANT = 'ten_01JDBENCHPEER000000000000A';
/** Portkey listens here whatever `--port` says (design.md §3). */
const PORTKEY_URL = 'http://127.0.0.1:8787';
const MESSAGE = 'I have had a headache for two days.';

type Target = 'ours' | 'portkey' | 'limit' | 'pipeline';

interface Row extends LoadResult {
  round: number;
  target: Target;
}

export async function run(): Promise<void> {
  ensurePeers();
  const redisUrl = process.env.REDIS_URL;
  if (!redisUrl) throw new Error('assist-peer measures the quota in Redis: set REDIS_URL');
  const levels = (process.env.BENCH_ASSIST_PEER_CONNECTIONS ?? '1,10,50').split(',').map(Number);
  const db = await freshDatabase();
  const keys = await benchKeys();
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const procs: Array<Pick<Proc, 'stop'>> = [];
  try {
    const upstreamProc = await startFakeUpstream();
    procs.push(upstreamProc.proc);
    const upstream = upstreamProc.url;
    const built = process.env.BENCH_OURS_BUILT === '1';
    const ours = await startOurs({
      name: built ? 'ours (node dist/main.js)' : 'ours (npm start)',
      db,
      keys,
      upstream,
      tenant: TENANT,
    });
    procs.push(ours);
    const base = ours.base;
    const oursEnv = ours.env;
    const portkey = await spawnNode('portkey', PORTKEY_BIN, { tsx: false, cwd: PEERS, readyUrl: `${PORTKEY_URL}/` });
    procs.push(portkey);
    const limitPort = await freePort();
    const limitBase = `http://127.0.0.1:${limitPort}`;
    procs.push(
      await spawnNode('bare assist (limit)', 'bench/bare-assist.ts', {
        env: { DATABASE_URL: db.url, REDIS_URL: redisUrl, UPSTREAM_URL: upstream, PORT: String(limitPort), DB_POOL_SIZE: '10' },
        readyUrl: `${limitBase}/healthz`,
      }),
    );
    const pipelinePort = await freePort();
    const pipelineBase = `http://127.0.0.1:${pipelinePort}`;
    procs.push(
      await spawnNode('layer: assist pipeline behind bare node:http', 'bench/bare-pipeline.ts', {
        env: { ...oursEnv, PORT: String(pipelinePort) },
        readyUrl: `${pipelineBase}/healthz`,
      }),
    );

    const token = await keys.token(TENANT, 'ai.assist');
    const oursHeaders = { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-tenant-id': TENANT };
    const assistBody = JSON.stringify({
      featureKey: 'portal.triage',
      variables: { locale: 'en', message: MESSAGE },
      context: { facilityId: 'fac-bench', specialty: 'general' },
    });
    const portkeyHeaders = {
      'content-type': 'application/json',
      authorization: 'Bearer sk-bench',
      'x-portkey-provider': 'openai',
      'x-portkey-custom-host': upstream,
    };
    const portkeyBody = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: MESSAGE }] });
    const oursRequests: autocannon.Request[] = [
      {
        method: 'POST',
        headers: oursHeaders,
        body: assistBody,
        // Every request is a new write: a fresh Idempotency-Key each time.
        setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'idempotency-key': newUlid() } }),
      },
    ];

    // Every target answers from the model before anything is timed; ours (and its pipeline layer)
    // from the hosted provider, not a fallback.
    const fromHostedProvider = (url: string) =>
      probe(
        url,
        { method: 'POST', headers: { ...oursHeaders, 'idempotency-key': newUlid() }, body: assistBody },
        (status, body) => {
          const answer = body as { status?: string; provider?: string };
          return status === 200 && answer.status === 'completed' && answer.provider === 'openai-compatible'
            ? undefined
            : 'not a completed answer of the openai-compatible provider';
        },
      );
    await fromHostedProvider(`${base}/v1/ai/assist`);
    await probe(
      `${PORTKEY_URL}/v1/chat/completions`,
      { method: 'POST', headers: portkeyHeaders, body: portkeyBody },
      (status, body) =>
        status === 200 && (body as { choices?: unknown[] }).choices?.length === 1 ? undefined : 'not a completion',
    );

    await probe(`${limitBase}/assist`, { method: 'POST', headers: oursHeaders, body: assistBody }, (status, body) =>
      status === 200 && (body as { status?: string }).status === 'completed' ? undefined : 'not a completed answer',
    );
    await fromHostedProvider(`${pipelineBase}/assist`);

    const targets = {
      limit: {
        label: 'limit: bare node:http + quota + upstream + INSERT',
        url: `${limitBase}/assist`,
        method: 'POST' as const,
        headers: oursHeaders,
        body: assistBody,
      },
      ours: { label: 'ours: POST /v1/ai/assist', url: `${base}/v1/ai/assist`, requests: oursRequests },
      pipeline: {
        label: 'layer: our assist pipeline behind bare node:http',
        url: `${pipelineBase}/assist`,
        requests: oursRequests,
      },
      portkey: {
        label: "Portkey's gateway: POST /v1/chat/completions",
        url: `${PORTKEY_URL}/v1/chat/completions`,
        method: 'POST' as const,
        headers: portkeyHeaders,
        body: portkeyBody,
      },
    };
    await measure('prewarm ours', { ...targets.ours, connections: 10, warmup: 0, duration: PREWARM });
    await measure('prewarm portkey', { ...targets.portkey, connections: 10, warmup: 0, duration: PREWARM });
    await measure('prewarm limit', { ...targets.limit, connections: 10, warmup: 0, duration: PREWARM });
    await measure('prewarm pipeline', { ...targets.pipeline, connections: 10, warmup: 0, duration: PREWARM });

    const recorded = () => countRecords(db.prisma, redis);
    const rows: Row[] = [];
    const checks: string[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const connections of levels) {
        const order: Target[] =
          round % 2 === 1 ? ['ours', 'portkey', 'limit', 'pipeline'] : ['pipeline', 'limit', 'portkey', 'ours'];
        for (const target of order) {
          if (target !== 'ours') {
            rows.push({ ...(await measure(targets[target].label, { ...targets[target], connections })), round, target });
            continue;
          }
          // The warm-up's answers are recorded too; the check compares the measured run alone.
          await measure(targets.ours.label, { ...targets.ours, connections, duration: 2, warmup: 0 });
          const before = await recorded();
          const result = await measure(targets.ours.label, { ...targets.ours, connections, warmup: 0 });
          const after = await recorded();
          const answered = result.requests - result.errors;
          checks.push(recordCheck(round, connections, answered, before, after));
          rows.push({ ...result, round, target });
        }
      }
    }

    heading(`assist vs Portkey's gateway, same fake upstream, ${DURATION} s per run (quota on, Postgres, Redis)`);
    console.log(
      table(
        ['>round', ...LOAD_HEADERS, 'load 1m'],
        rows.map((r) => [r.round, ...loadResultRow(r)]),
      ),
    );
    console.log('\nEvery answer recorded (rows and keys added during each of our runs):\n');
    console.log(checks.join('\n'));
    console.log('\nRatios within each round (ours / Portkey; ours / the bare limit server; the pipeline layer / Portkey):\n');
    const ratios: Array<Array<string | number>> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const connections of levels) {
        const pick = (target: Row['target']) =>
          rows.find((r) => r.round === round && r.connections === connections && r.target === target)!;
        const [a, b, limit, layer] = [pick('ours'), pick('portkey'), pick('limit'), pick('pipeline')];
        const verdict =
          connections === 1
            ? a.p95 <= b.p95 + 3
              ? 'met (p95 ≤ +3 ms)'
              : 'missed (p95 ≤ +3 ms)'
            : a.rps >= 0.5 * b.rps
              ? 'met (≥ 0.5×)'
              : 'missed (≥ 0.5×)';
        const limitVerdict = a.rps >= 0.5 * limit.rps ? 'met (≥ 0.5×)' : 'missed (≥ 0.5×)';
        ratios.push([
          round,
          connections,
          f(a.rps / b.rps, 2),
          `${f(a.p95)} vs ${f(b.p95)}`,
          f(a.p95 - b.p95),
          verdict,
          f(a.rps / limit.rps, 2),
          limitVerdict,
          f(layer.rps / b.rps, 2),
        ]);
      }
    }
    console.log(
      table(
        [
          '>round',
          '>conns',
          '>req/s ours/Portkey',
          'p95 ms ours vs Portkey',
          '>p95 difference ms',
          'target vs Portkey',
          '>req/s ours/limit',
          'target vs limit',
          '>req/s pipeline layer/Portkey',
        ],
        ratios,
      ),
    );
  } finally {
    for (const proc of procs.reverse()) await proc.stop();
    redis.disconnect();
    await db.close();
  }
}

export interface Records {
  provenance: number;
  audit: number;
  effects: number;
  /** Requests counted per minute window (`quota:{tenant}:rpm:<minute>`), by key. */
  quotaWindows: Map<string, number>;
}

/** What a recorded answer leaves: its provenance, audit and keyed-effect rows, and its quota count. */
export async function countRecords(
  prisma: Awaited<ReturnType<typeof freshDatabase>>['prisma'],
  redis: Redis,
  tenant = TENANT,
): Promise<Records> {
  const [provenance, audit, effects] = await Promise.all([
    prisma.aIProvenance.count({ where: { tenantId: tenant } }),
    prisma.outboxEvent.count({ where: { tenantId: tenant, eventType: { startsWith: 'audit.ai.' } } }),
    prisma.idempotentEffect.count(),
  ]);
  const quotaWindows = new Map<string, number>();
  for (const key of await redis.keys(`quota:{${tenant}}:rpm:*`)) quotaWindows.set(key, Number((await redis.get(key)) ?? 0));
  return { provenance, audit, effects, quotaWindows };
}

export function recordCheck(round: number, connections: number, answered: number, before: Records, after: Records): string {
  const rows = {
    provenance: after.provenance - before.provenance,
    audit: after.audit - before.audit,
    effects: after.effects - before.effects,
  };
  // A minute window expires 5 s after its minute: a run across that moment loses its count.
  const rolled = [...before.quotaWindows.keys()].some((key) => !after.quotaWindows.has(key));
  const quota = [...after.quotaWindows].reduce((sum, [key, value]) => sum + value - (before.quotaWindows.get(key) ?? 0), 0);
  const complete = Object.values(rows).every((added) => added >= answered) && (rolled || quota >= answered);
  return `- round ${round}, ${connections} connections: ${answered} answers; provenance +${rows.provenance}, audit +${rows.audit}, keyed effects +${rows.effects}, quota ${rolled ? 'n/a (a minute window expired)' : `+${quota}`}: ${complete ? 'every answer recorded' : 'RECORDS MISSING'}`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
