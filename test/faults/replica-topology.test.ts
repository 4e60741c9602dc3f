import fs from 'node:fs/promises';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import pg from 'pg';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../events/bus/jetstream-bus.js';
import { subjectFor, type EventEnvelope } from '../../events/envelope.js';
import { ensureStreams } from '../../events/streams.js';
import { generateEd25519, mintToken, type DevKeyPair } from '../../platform/auth/dev-keys.js';
import { newId, newUlid } from '../../platform/ids.js';
import { silentLogger } from '../../platform/observability/logger.js';
import { loadSystemConfig } from '../../processes/config.js';
import { builtPayload, consumedEnvelope } from '../integration/catalog/harness.js';
import { freePort, processDataDir } from '../support/child-env.js';
import { spawnEntry, waitForHttp, type EntryProcess } from '../support/entry-process.js';
import { eventually } from '../support/eventually.js';
import {
  privateServicesAvailable,
  startPrivateNatsCluster,
  startPrivatePostgres,
  startPrivateRedis,
  type PrivateNatsCluster,
  type PrivatePostgres,
  type PrivateRedis,
} from '../support/private-services.js';
import { recordFigures } from '../support/reliability-figures.js';
import { startBalancer, type Balancer } from '../support/test-balancer.js';

/**
 * The production topology on loopback (issue #22): a 3-node JetStream cluster (streams with 3
 * replicas), a private Postgres and Redis, two replicas of every part as its own process (catalog,
 * AI, worker, gateway; each gateway given both subgraph replicas as a URL list) and the gateways
 * behind a balancer that follows /readyz. While clients read and write through the balancer and a
 * producer publishes play-package-built events, the nemesis SIGKILLs one replica of each part (a
 * supervisor restarts it), SIGSTOPs the worker leading the outbox relay until the other takes the
 * lease, and stops the node leading the CONTENT stream until the cluster has moved on without it.
 *
 * Must hold: every built event is exactly one CourseVersion (by sourceEventId), each course's
 * versions in producer order; every client request ends in a 2xx, its failed attempts only the
 * documented ones (503 with Retry-After, 409 `idempotency.in_flight` with Retry-After ≤ 10, a
 * connection cut by the killed gateway while it was down), never a 4xx an outage caused; every
 * outbox row published in the end.
 */
const EVENTS = Number(process.env.REPLICA_TOPOLOGY_EVENTS ?? 600);
const COURSES = 12;
const CLIENTS = 4;
const LEASE_SECONDS = 3;
const READY_MS = 180_000;
const CONVERGENCE_MS = 300_000;
/** A client gives up on one request (retrying its documented refusals) after this long. */
const REQUEST_DEADLINE_MS = 120_000;
const BUILT_SUBJECT = subjectFor('content.play_package.built', 1);
const PARTS = ['catalog', 'ai', 'worker', 'gateway'] as const;
type Part = (typeof PARTS)[number];
const FAULTS = [
  'SIGKILL catalog-1',
  'SIGKILL ai-1',
  'SIGKILL gateway-1',
  'SIGKILL worker-1',
  'SIGSTOP relay leader',
  'stop CONTENT leader node',
];

/** A deliberate backoff (a Retry-After, a publish retry) or a producer's pace; never a stand-in for waiting on a state. */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Replica {
  name: string;
  part: Part;
  door?: number;
  ops: number;
  process?: EntryProcess;
  /** Set while the test itself stops or kills it: an exit then is planned. */
  faulted: boolean;
}

/** One attempt's outcome, as a client classifies it. */
type Attempt =
  | { kind: 'ok'; status: number }
  | { kind: 'documented 503'; code: string; retryAfter: number }
  | { kind: 'in flight 409'; retryAfter: number }
  | { kind: 'connection cut'; at: number; detail: string }
  | { kind: 'unexpected'; status: number; detail: string };

const runs = privateServicesAvailable('replica topology', ['nats-server', 'postgres', 'redis-server']);

describe.runIf(runs)('replica topology: two replicas of every part on a 3-node JetStream cluster', () => {
  let cluster: PrivateNatsCluster;
  let postgres: PrivatePostgres;
  let redis: PrivateRedis;
  let keys: DevKeyPair;
  let bus: EventBus;
  let inspector: NatsConnection;
  let jsm: JetStreamManager;
  let observer: pg.Pool;
  let balancer: Balancer;
  let dataDir: string;
  let env: Record<string, string>;
  const replicas = new Map<string, Replica>();
  const unplannedExits: string[] = [];
  const notes: string[] = [];
  const tally = { faults: 0, events: 0, lost: 0, duplicated: 0, requests: 0, serverErrors: 0 };

  async function startReplica(replica: Replica): Promise<number> {
    const started = Date.now();
    const doorVariable = { gateway: 'PORT', catalog: 'CATALOG_PORT', ai: 'AI_PORT', worker: undefined }[replica.part];
    const child = spawnEntry(`processes/${replica.part}.main.ts`, {
      ...env,
      SERVICE_INSTANCE: replica.name,
      METRICS_PORT: String(replica.ops),
      ...(doorVariable ? { [doorVariable]: String(replica.door) } : {}),
    });
    replica.process = child;
    replica.faulted = false;
    void child.exited.then(() => {
      // A replica that dies of anything but the nemesis is a finding: it is said, and restarted.
      if (replica.process !== child || replica.faulted) return;
      unplannedExits.push(`${replica.name} exited:\n${child.output().slice(-4_000)}`);
      void startReplica(replica).catch(() => undefined);
    });
    await waitForHttp(child, `http://127.0.0.1:${replica.ops}/readyz`, replica.name, READY_MS);
    return Date.now() - started;
  }

  beforeAll(async () => {
    [cluster, postgres, redis, keys] = await Promise.all([
      startPrivateNatsCluster(3),
      startPrivatePostgres(),
      startPrivateRedis(),
      generateEd25519(),
    ]);
    dataDir = processDataDir('replica-topology-');
    observer = new pg.Pool({ connectionString: postgres.url, max: 2 });
    inspector = await connect({ servers: cluster.url.split(','), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    jsm = await jetstreamManager(inspector);
    bus = await connectJetStreamBus(cluster.url, { logger: silentLogger });
    // The test plays the content service: its stream exists, replicated on the three nodes.
    await ensureStreams(bus, loadSystemConfig({ NATS_URL: cluster.url, STREAM_REPLICAS: '3', CREATE_PRODUCER_STREAMS: 'true' }));

    for (const part of PARTS) {
      for (const index of [1, 2]) {
        const name = `${part}-${index}`;
        replicas.set(name, {
          name,
          part,
          door: part === 'worker' ? undefined : await freePort(),
          ops: await freePort(),
          faulted: false,
        });
      }
    }
    const doors = (part: Part) =>
      [1, 2].map((index) => `http://127.0.0.1:${replicas.get(`${part}-${index}`)!.door}/graphql`).join(',');
    env = {
      DATABASE_URL: postgres.url,
      REDIS_URL: redis.url,
      NATS_URL: cluster.url,
      AUTH_PUBLIC_KEY: JSON.stringify(keys.publicJwk),
      STREAM_REPLICAS: '3',
      CREATE_PRODUCER_STREAMS: 'true',
      OTEL_SDK_DISABLED: 'true',
      DB_POOL_SIZE: '3',
      OUTBOX_RELAY_LEASE_SECONDS: String(LEASE_SECONDS),
      DATA_DIR: dataDir,
      CATALOG_URL: doors('catalog'),
      AI_URL: doors('ai'),
    };
    // The first catalog migrates the empty database (MIGRATE_ON_START is on outside production);
    // the others start on a migrated schema.
    await startReplica(replicas.get('catalog-1')!);
    await Promise.all([...replicas.values()].filter((r) => r.name !== 'catalog-1').map(startReplica));
    balancer = await startBalancer(
      [1, 2].map((index) => `http://127.0.0.1:${replicas.get(`gateway-${index}`)!.door}`),
      { intervalMs: 200 },
    );
  });

  afterAll(async () => {
    for (const replica of replicas.values()) {
      replica.faulted = true;
      if (replica.process?.running()) {
        // A stopped process never exits on SIGTERM; SIGKILL ends it either way.
        process.kill(replica.process.pid, 'SIGCONT');
        await replica.process.kill('SIGKILL');
      }
    }
    await balancer?.close();
    await bus?.close().catch(() => undefined);
    await inspector?.close().catch(() => undefined);
    await observer?.end().catch(() => undefined);
    await Promise.all([cluster?.destroy(), postgres?.destroy(), redis?.destroy()]);
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
    recordFigures({
      suite: 'replica topology',
      faultsInjected: tally.faults,
      eventsChecked: tally.events,
      lost: tally.lost,
      duplicated: tally.duplicated,
      requestsTried: tally.requests,
      serverErrors: tally.serverErrors,
      notes,
    });
  });

  async function query<T extends pg.QueryResultRow>(sql: string): Promise<T[]> {
    return (await observer.query<T>(sql)).rows;
  }

  async function relayLeader(replica: Replica): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${replica.ops}/metrics`, { signal: AbortSignal.timeout(2_000) })).text();
    return Number(/^outbox_relay_leader (\S+)$/m.exec(text)?.[1]);
  }

  async function streamLeader(stream: string): Promise<string> {
    const leader = (await jsm.streams.info(stream)).cluster?.leader;
    if (!leader) throw new Error(`${stream} has no leader`);
    return leader;
  }

  it('loses, doubles and reorders no event and answers every request through kills, a frozen relay leader and a lost stream leader', async () => {
    const t0 = Date.now();
    const at = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
    const timeline: string[] = [];

    // --- the producer: built events for COURSES courses, increasing version labels ------------
    const tenant = newId('tenant');
    const drafts = Array.from({ length: COURSES }, () => newId('courseDraft'));
    // Input i: course i % COURSES, label 1.<i / COURSES>.0, so labels grow with the producer's order.
    const inputs: EventEnvelope[] = Array.from({ length: EVENTS }, (_, i) =>
      consumedEnvelope(
        'built',
        builtPayload(tenant, `topology-${i % COURSES}`, `1.${Math.floor(i / COURSES)}.0`, { courseDraftId: drafts[i % COURSES] }),
      ),
    );
    const slice = Math.ceil(EVENTS / (FAULTS.length + 1));
    let allowed = slice;
    let published = 0;
    let publishRetries = 0;
    const producing = (async () => {
      for (const envelope of inputs) {
        while (published >= allowed) await pause(20);
        // Until JetStream acknowledged it (the same Nats-Msg-Id: a retry of a publish that landed is dropped).
        for (const deadline = Date.now() + CONVERGENCE_MS; ;) {
          const sent = await bus.publish(BUILT_SUBJECT, Buffer.from(JSON.stringify(envelope)), { msgId: envelope.eventId }).then(
            () => true,
            (error: unknown) => {
              if (Date.now() > deadline) throw error;
              return false;
            },
          );
          if (sent) break;
          publishRetries += 1;
          await pause(200);
        }
        published += 1;
        await pause(25);
      }
    })();

    // --- the clients: reads and keyed writes through the balancer, retrying documented refusals --
    const agent = new Agent({ connections: CLIENTS * 2, keepAliveTimeout: 10_000 });
    const reader = await mintToken(keys.privateJwk, { sub: 'svc:topology', tid: tenant, scope: 'catalog.read' });
    const attempts: Array<Attempt & { request: 'read' | 'write' }> = [];
    const failedRequests: string[] = [];
    let longestKeyBlockMs = 0;
    let loading = true;

    const attempt = async (request: { path: string; method: string; headers: Record<string, string>; body?: string }) => {
      try {
        const response = await fetch(`${balancer.url}${request.path}`, {
          method: request.method,
          headers: request.headers,
          body: request.body,
          dispatcher: agent,
        });
        const text = await response.text();
        let json: { code?: string; errors?: Array<{ extensions?: { code?: string } }> } = {};
        try {
          json = JSON.parse(text) as typeof json;
        } catch {
          json = {};
        }
        const code = json.code ?? json.errors?.[0]?.extensions?.code ?? '';
        const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN);
        if (response.status < 300 && !json.errors) return { kind: 'ok', status: response.status } as const;
        if (response.status === 503 && code === 'subgraph.unavailable' && retryAfter >= 0)
          return { kind: 'documented 503', code, retryAfter } as const;
        if (response.status === 409 && code === 'idempotency.in_flight' && retryAfter >= 0)
          return { kind: 'in flight 409', retryAfter } as const;
        // The balancer's own answer when the gateway it forwarded to died under the request.
        if (response.status === 502 && text.startsWith('balancer:'))
          return { kind: 'connection cut', at: Date.now(), detail: text.slice(0, 200) } as const;
        return {
          kind: 'unexpected',
          status: response.status,
          detail: `${request.method} ${request.path}: ${text.slice(0, 300)}`,
        } as const;
      } catch (error) {
        return {
          kind: 'unexpected',
          status: 0,
          detail: `${request.method} ${request.path}: ${String((error as Error).cause ?? error)}`,
        } as const;
      }
    };

    const clientRequest = async (i: number) => {
      const kind = i % 3;
      let request: { path: string; method: string; headers: Record<string, string>; body?: string };
      if (kind === 0) {
        request = {
          path: '/graphql',
          method: 'POST',
          headers: { authorization: `Bearer ${reader}`, 'x-tenant-id': tenant, 'content-type': 'application/json' },
          body: JSON.stringify({ query: '{ courses(first: 5) { edges { node { courseId slug } } } }' }),
        };
      } else if (kind === 1) {
        request = {
          path: '/api/v1/courses?limit=5',
          method: 'GET',
          headers: { authorization: `Bearer ${reader}`, 'x-tenant-id': tenant },
        };
      } else {
        // A tenant of its own per write: a routing rule for the feature exists once per tenant.
        const writer = newId('tenant');
        const token = await mintToken(keys.privateJwk, { sub: 'svc:topology', tid: writer, scope: 'ai.admin' });
        request = {
          path: '/v1/admin/routing-rules',
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'x-tenant-id': writer,
            'content-type': 'application/json',
            'idempotency-key': newUlid(),
          },
          body: JSON.stringify({ featureKey: 'portal.triage', primary: { provider: 'mock', model: 'm' }, fallbacks: [] }),
        };
      }
      tally.requests += 1;
      const deadline = Date.now() + REQUEST_DEADLINE_MS;
      let blockedSince: number | undefined;
      for (;;) {
        const outcome = await attempt(request);
        attempts.push({ ...outcome, request: kind === 2 ? 'write' : 'read' });
        if (outcome.kind === 'ok') break;
        if (outcome.kind === 'unexpected' || Date.now() > deadline) {
          failedRequests.push(
            outcome.kind === 'unexpected' ? `${outcome.status} ${outcome.detail}` : `gave up: ${JSON.stringify(outcome)}`,
          );
          return;
        }
        if (outcome.kind === 'in flight 409') blockedSince ??= Date.now();
        // The client does what the answer says: wait Retry-After (capped for the test's pace), same key.
        await pause(outcome.kind === 'connection cut' ? 200 : Math.min(outcome.retryAfter, 2) * 1000);
      }
      if (blockedSince !== undefined) longestKeyBlockMs = Math.max(longestKeyBlockMs, Date.now() - blockedSince);
    };
    const clients = Promise.all(
      Array.from({ length: CLIENTS }, async (_, id) => {
        for (let i = id; loading; i += CLIENTS) await clientRequest(i);
      }),
    );

    // --- the nemesis: one fault at a time, each while the producer publishes its slice --------
    const versions = async () => (await query<{ n: number }>('SELECT count(*)::int AS n FROM "CourseVersion"'))[0].n;
    const gatewayDown: Array<[number, number]> = [];
    const killAndRestart = async (name: string) => {
      const replica = replicas.get(name)!;
      replica.faulted = true;
      const killedAt = Date.now();
      timeline.push(`${at()} SIGKILL ${name}`);
      await replica.process!.kill('SIGKILL');
      const readyMs = await startReplica(replica);
      if (replica.part === 'gateway') gatewayDown.push([killedAt, Date.now()]);
      timeline.push(`${at()} ${name} restarted, ready in ${(readyMs / 1000).toFixed(1)} s`);
    };
    for (const [k, fault] of FAULTS.entries()) {
      await eventually(() => published >= allowed, `the producer's slice before "${fault}"`, {
        timeoutMs: CONVERGENCE_MS,
        intervalMs: 100,
      });
      allowed = Math.min(EVENTS, (k + 2) * slice);
      tally.faults += 1;
      if (fault.startsWith('SIGKILL')) await killAndRestart(fault.split(' ')[1]);
      else if (fault === 'SIGSTOP relay leader') {
        const workers = [replicas.get('worker-1')!, replicas.get('worker-2')!];
        const leader = await eventually(
          async () => {
            const gauges = await Promise.all(workers.map(relayLeader));
            const leading = workers.filter((_, i) => gauges[i] === 1);
            if (leading.length !== 1) throw new Error(`relay leader gauges ${gauges.join(', ')}`);
            return leading[0];
          },
          'one relay leader',
          { timeoutMs: 60_000, intervalMs: 200 },
        );
        const follower = workers.find((w) => w !== leader)!;
        leader.faulted = true;
        process.kill(leader.process!.pid, 'SIGSTOP');
        const stoppedAt = Date.now();
        timeline.push(`${at()} SIGSTOP ${leader.name} (relay leader)`);
        await eventually(async () => (await relayLeader(follower)) === 1, `${follower.name} to take the relay lease`, {
          timeoutMs: 60_000,
          intervalMs: 100,
        });
        timeline.push(
          `${at()} ${follower.name} took the lease ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s after the stop (lease ${LEASE_SECONDS} s); SIGCONT ${leader.name}`,
        );
        process.kill(leader.process!.pid, 'SIGCONT');
        leader.faulted = false;
        await eventually(async () => (await relayLeader(leader)) === 0, `${leader.name} to know it does not lead`, {
          timeoutMs: 60_000,
          intervalMs: 200,
        });
      } else {
        const stream = 'CONTENT';
        const leaderName = await eventually(() => streamLeader(stream), `the ${stream} leader`, { timeoutMs: 60_000 });
        const node = cluster.node(leaderName);
        const before = await versions();
        await node.stop('SIGKILL');
        const stoppedAt = Date.now();
        timeline.push(`${at()} SIGKILL nats ${leaderName} (${stream} leader)`);
        const successor = await eventually(
          async () => {
            const now = await streamLeader(stream);
            if (now === leaderName) throw new Error(`still ${now}`);
            return now;
          },
          `a new ${stream} leader`,
          { timeoutMs: 120_000, intervalMs: 200 },
        );
        timeline.push(`${at()} ${successor} leads ${stream}, ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s after the stop`);
        // The cluster works without the node: events published during the outage become versions.
        await eventually(
          async () => {
            const n = await versions();
            if (n < before + Math.min(slice, 30)) throw new Error(`${n - before} new versions`);
          },
          'new versions with a node down',
          { timeoutMs: 120_000, intervalMs: 200 },
        );
        await node.start();
        timeline.push(`${at()} nats ${leaderName} started again (down ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s)`);
      }
    }
    allowed = EVENTS;
    await producing;
    const faultsDoneAt = Date.now();
    // A last stretch of load on the whole topology, then the clients stop.
    const requestsAtEnd = tally.requests;
    await eventually(() => tally.requests >= requestsAtEnd + CLIENTS * 3, 'load on the restored topology', {
      timeoutMs: 120_000,
      intervalMs: 100,
    });
    loading = false;
    await clients;
    await agent.close();

    // --- convergence -----------------------------------------------------------------------
    await eventually(
      async () => {
        const [row] = await query<{ versions: number; unpublished: number }>(
          `SELECT (SELECT count(*)::int FROM "CourseVersion") AS versions,
                  (SELECT count(*)::int FROM "OutboxEvent" WHERE "publishedAt" IS NULL) AS unpublished`,
        );
        if (row.versions < EVENTS || row.unpublished > 0) throw new Error(`not yet: ${JSON.stringify(row)}`);
      },
      'every event a version and every outbox row published',
      { timeoutMs: CONVERGENCE_MS, intervalMs: 500 },
    );
    const convergedMs = Date.now() - faultsDoneAt;

    // --- what the system holds --------------------------------------------------------------
    const rows = await query<{ sourceEventId: string | null; courseId: string; versionLabel: string; sequence: number }>(
      'SELECT "sourceEventId", "courseId", "versionLabel", sequence FROM "CourseVersion" ORDER BY "courseId", sequence',
    );
    const bySource = new Map<string, number>();
    for (const r of rows) bySource.set(r.sourceEventId ?? '', (bySource.get(r.sourceEventId ?? '') ?? 0) + 1);
    const inputIds = new Set(inputs.map((e) => e.eventId));
    tally.events = EVENTS;
    tally.lost = inputs.filter((e) => !bySource.has(e.eventId)).length;
    tally.duplicated = [...bySource.values()].filter((n) => n > 1).length;
    const strangers = [...bySource.keys()].filter((id) => !inputIds.has(id));
    // Producer order: within a course, the label's minor (the producer's order) grows with the sequence.
    const minors = new Map<string, number[]>();
    for (const r of rows) minors.set(r.courseId, [...(minors.get(r.courseId) ?? []), Number(r.versionLabel.split('.')[1])]);
    const outOfOrder = [...minors.entries()]
      .filter(([, m]) => m.some((v, i) => i > 0 && v <= m[i - 1]))
      .map(([course, m]) => `${course}: ${m.join(' ')}`);
    const [{ unpublished }] = await query<{ unpublished: number }>(
      'SELECT count(*)::int AS unpublished FROM "OutboxEvent" WHERE "publishedAt" IS NULL',
    );

    const count = (kind: Attempt['kind']) => attempts.filter((a) => a.kind === kind).length;
    const documented503 = attempts.filter((a) => a.kind === 'documented 503');
    const inFlight = attempts.filter((a) => a.kind === 'in flight 409');
    const cuts = attempts.filter((a) => a.kind === 'connection cut');
    const writes = (list: Array<{ request: 'read' | 'write' }>) => list.filter((a) => a.request === 'write').length;
    const cutsOutsideOutage = cuts.filter((c) => !gatewayDown.some(([from, to]) => c.at >= from && c.at <= to));
    tally.serverErrors = attempts.filter((a) => a.kind === 'unexpected' && a.status >= 500).length;
    notes.push(
      `topology: 3-node JetStream cluster (streams × 3 replicas), private Postgres and Redis; 2 × catalog, ai, worker, gateway processes (DB_POOL_SIZE 3, relay lease ${LEASE_SECONDS} s), gateways given both subgraph replicas as URL lists, behind a balancer following /readyz`,
      `faults: ${timeline.join('; ')}`,
      `${EVENTS} built events over ${COURSES} courses (${publishRetries} publish retries): ${tally.lost} lost, ${tally.duplicated} duplicated, ${outOfOrder.length} courses out of producer order; converged ${(convergedMs / 1000).toFixed(1)} s after the last fault`,
      `${tally.requests} client requests (${CLIENTS} clients: GraphQL, REST, keyed writes), ${attempts.length} attempts: ${count('ok')} ok, ${documented503.length} documented 503 with Retry-After (${writes(documented503)} of them keyed writes), ${inFlight.length} 409 idempotency.in_flight (max Retry-After ${Math.max(0, ...inFlight.map((a) => (a.kind === 'in flight 409' ? a.retryAfter : 0)))} s), ${cuts.length} connections cut by the killed gateway (${writes(cuts)} keyed writes, retried with their key), ${count('unexpected')} unexpected; longest keyed write blocked ${(longestKeyBlockMs / 1000).toFixed(1)} s; balancer served ${JSON.stringify(Object.values(balancer.served()))}`,
      `duration ${((Date.now() - t0) / 1000).toFixed(0)} s; unplanned exits ${unplannedExits.length}`,
    );

    expect(unplannedExits).toEqual([]);
    expect({ lost: tally.lost, duplicated: tally.duplicated, strangers, outOfOrder }).toEqual({
      lost: 0,
      duplicated: 0,
      strangers: [],
      outOfOrder: [],
    });
    expect(rows).toHaveLength(EVENTS);
    expect(unpublished).toBe(0);
    // Every request answered in the end; the attempts that failed are only the documented kinds.
    expect(failedRequests).toEqual([]);
    expect(inFlight.filter((a) => a.kind === 'in flight 409' && a.retryAfter > 10)).toEqual([]);
    expect(cutsOutsideOutage).toEqual([]);
    expect(balancer.failures()).toBe(cuts.length);
    expect(longestKeyBlockMs).toBeLessThanOrEqual(15_000);
  });
});
