// Shared plumbing of the benchmark scripts: processes on free loopback ports, a fresh database,
// tokens, one autocannon measurement with p50/p95/p99, RSS and load-average sampling, tables.
// Nothing here asserts a speed: scripts print what they measured (house rule: goals live in bench/).
import 'reflect-metadata';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { generateEd25519, mintToken, type DevKeyPair } from '../platform/auth/dev-keys.js';
import { childEnv, freePort } from '../test/support/child-env.js';
import { createTestDatabase, type TestDatabase } from '../test/support/database.js';

export { freePort };

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const DURATION = Number(process.env.BENCH_DURATION_SECONDS ?? 10);
export const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
/**
 * Once per target before the first round: a fresh process needs well over the per-run warm-up
 * before its numbers settle (round 1 of the first recorded run was 2-3x slower than round 2).
 */
export const PREWARM = Number(process.env.BENCH_PREWARM_SECONDS ?? 10);
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);

// ------------------------------------------------------------------ peers

export const PEERS = path.join(ROOT, 'bench/peers');
export const HIVE_BIN = path.join(PEERS, 'node_modules/@graphql-hive/gateway/dist/bin.js');
export const PORTKEY_BIN = path.join(PEERS, 'node_modules/@portkey-ai/gateway/build/start-server.js');

/**
 * The peers (Hive Gateway with its Rust planner, Portkey's AI gateway) pull ~800 packages, so they
 * live in bench/peers (design.md §3), installed here on first use rather than with the root.
 */
export function ensurePeers(): void {
  if (
    fs.existsSync(HIVE_BIN) &&
    fs.existsSync(PORTKEY_BIN) &&
    fs.existsSync(path.join(PEERS, 'node_modules/@graphql-hive/router-runtime'))
  )
    return;
  console.log('Installing the bench peers into bench/peers/node_modules, once ...');
  const lock = fs.existsSync(path.join(PEERS, 'package-lock.json'));
  execFileSync('npm', [lock ? 'ci' : 'install', '--prefix', PEERS, '--no-audit', '--no-fund', '--loglevel=error'], {
    stdio: 'inherit',
    cwd: ROOT,
  });
}

// ------------------------------------------------------------------ processes

export interface Proc {
  name: string;
  pid: number;
  child: ChildProcess;
  /** Resident set size of the process and its descendants, MB. */
  rssMb(): number;
  output(): string;
  stop(): Promise<void>;
}

const running = new Set<Proc>();

/** Every child still running is killed when the bench exits, however it exits. */
function killAll(): void {
  for (const proc of running) proc.child.kill('SIGKILL');
}
process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAll();
    process.exit(130);
  });
}

export interface SpawnOptions {
  /** Variables on top of the isolated environment; undefined removes one. */
  env?: Record<string, string | undefined>;
  /** Node flags before the entry, e.g. --cpu-prof. */
  nodeArgs?: string[];
  args?: string[];
  /** A URL that answers 2xx once the process serves. */
  readyUrl?: string;
  readyTimeoutMs?: number;
  cwd?: string;
  /** Run the entry with tsx (our TypeScript entries); false for plain JS (peers). */
  tsx?: boolean;
  /** Another Node binary than the one running the bench (bench/startup.ts compares runtimes). */
  nodePath?: string;
}

export async function spawnNode(name: string, entry: string, options: SpawnOptions = {}): Promise<Proc> {
  // As deployed: production mode (graphql-js skips its development-only checks), warnings only, no
  // trace export. Every process of a run gets the same, peers included.
  const env = childEnv({
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    OTEL_SDK_DISABLED: 'true',
    ...options.env,
  });
  // BENCH_CPU_PROF_DIR: every process of the run writes a V8 CPU profile there on exit, one folder
  // per process name (summarise one with `npx tsx bench/profile.ts <file>`).
  const profile = process.env.BENCH_CPU_PROF_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${path.join(process.env.BENCH_CPU_PROF_DIR, name)}`]
    : [];
  const nodeArgs = [...profile, ...(options.nodeArgs ?? []), ...(options.tsx === false ? [] : ['--import', 'tsx'])];
  const child = spawn(options.nodePath ?? process.execPath, [...nodeArgs, entry, ...(options.args ?? [])], {
    cwd: options.cwd ?? ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const record = (chunk: Buffer) => {
    log = (log + chunk.toString('utf8')).slice(-32 * 1024);
  };
  child.stdout?.on('data', record);
  child.stderr?.on('data', record);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const proc: Proc = {
    name,
    pid: child.pid ?? -1,
    child,
    rssMb: () => treeRssMb(child.pid ?? -1),
    output: () => log,
    async stop() {
      running.delete(proc);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const bound = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.kill('SIGTERM');
      await exited;
      clearTimeout(bound);
    },
  };
  running.add(proc);
  if (options.readyUrl) {
    try {
      await waitReady(options.readyUrl, proc, options.readyTimeoutMs);
    } catch (error) {
      await proc.stop();
      throw error;
    }
  }
  return proc;
}

export async function waitReady(url: string, proc: Proc, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) throw new Error(`${proc.name} exited with code ${proc.child.exitCode}:\n${proc.output()}`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(1000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${proc.name} did not answer ${url} within ${timeoutMs} ms:\n${proc.output()}`);
}

/** A process and its descendants (a peer may fork workers: the machine pays for all of them). */
function processTree(rootPid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // the process ended while we looked
    }
  }
  const tree: number[] = [];
  const stack = [rootPid];
  while (stack.length) {
    const pid = stack.pop()!;
    tree.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return tree;
}

function treeRssMb(rootPid: number): number {
  let kb = 0;
  for (const pid of processTree(rootPid)) {
    try {
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      kb += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    } catch {
      continue;
    }
  }
  return kb / 1024;
}

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** CPU time (user + system, every thread) the processes have used so far, ms; ended ones count 0. */
export function cpuMs(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime and stime are fields 14 and 15 of stat(5); `fields` starts at field 3.
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      continue;
    }
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** CPU time of a process and its descendants so far, ms. */
export function treeCpuMs(rootPid: number): number {
  return cpuMs(processTree(rootPid));
}

/**
 * Waits (at most 30 s: a wide page on a busy machine takes seconds) until the processes use under
 * 5 % of a core: the requests in flight are done, so a CPU reading taken then counts their cost.
 */
export async function settledCpu(procs: Proc[]): Promise<void> {
  const total = () => procs.reduce((sum, proc) => sum + treeCpuMs(proc.pid), 0);
  const deadline = Date.now() + 30_000;
  let before = total();
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = total();
    if (now - before <= 10) return;
    before = now;
  }
}

/**
 * CPU ms per request of `procs` over one measured run: `start` after the warm-up (measure's
 * beforeMeasuredRun), `perRequest` once the run is over and the processes are idle again. Same-run
 * req/s moves with whatever else the shared machine runs; CPU per request much less.
 */
export function cpuPerRequestMeter(procs: Proc[]) {
  let first = 0;
  return {
    start: async () => {
      await settledCpu(procs);
      first = procs.reduce((sum, proc) => sum + treeCpuMs(proc.pid), 0);
    },
    perRequest: async (requests: number) => {
      await settledCpu(procs);
      return (procs.reduce((sum, proc) => sum + treeCpuMs(proc.pid), 0) - first) / requests;
    },
  };
}

/** Samples a process's RSS while a measurement runs; `stop()` gives the peak and the last value. */
export function sampleRss(proc: Proc, everyMs = 500): { stop(): { peakMb: number; lastMb: number } } {
  let peak = proc.rssMb();
  let last = peak;
  const timer = setInterval(() => {
    last = proc.rssMb();
    peak = Math.max(peak, last);
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      last = proc.rssMb();
      return { peakMb: Math.max(peak, last), lastMb: last };
    },
  };
}

// ------------------------------------------------------------------ database, keys

/** A fresh, migrated database on the server of DATABASE_URL, dropped by `close()`. */
export async function freshDatabase(poolSize = 4, serverUrl?: string): Promise<TestDatabase> {
  if (serverUrl) return createTestDatabase('postgres', { poolSize, serverUrl });
  if (!process.env.DATABASE_URL) {
    throw new Error(
      'The benchmarks run against real Postgres: set DATABASE_URL (e.g. postgresql://postgres@127.0.0.1:5432/test); a fresh database is created on that server and dropped after',
    );
  }
  return createTestDatabase('postgres', { poolSize });
}

export interface Keys {
  pair: DevKeyPair;
  /** AUTH_PUBLIC_KEY for the processes under test. */
  publicKey: string;
  token(tenantId: string, scope: string): Promise<string>;
}

export async function benchKeys(): Promise<Keys> {
  const pair = await generateEd25519();
  return {
    pair,
    publicKey: JSON.stringify(pair.publicJwk),
    // The longest life the verifier accepts; a measurement mints its own token right before it runs.
    token: (tenantId, scope) => mintToken(pair.privateJwk, { sub: 'svc-bench', tid: tenantId, scope, ttlSeconds: 900 }),
  };
}

// ------------------------------------------------------------------ measuring

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  duration?: number;
  /** Seconds of discarded load first (JIT, pools, caches). */
  warmup?: number;
  /** Varying requests (e.g. a random id each time): autocannon's request list. */
  requests?: autocannon.Request[];
  /** Runs after the warm-up, right before the measured run (e.g. a CPU meter's first reading). */
  beforeMeasuredRun?: () => Promise<void>;
}

export interface LoadResult {
  label: string;
  connections: number;
  requests: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  /** Non-2xx answers, socket errors and timeouts. */
  errors: number;
  load: string;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * One bounded autocannon run (it stops by itself after `duration` seconds). Latencies are taken
 * per response, because autocannon's summary has p97.5 but no p95.
 */
export async function measure(label: string, options: LoadOptions): Promise<LoadResult> {
  const run = async (duration: number, record: boolean) => {
    const latencies: number[] = [];
    const result = await autocannon({
      url: options.url,
      method: options.method ?? 'GET',
      headers: options.headers,
      body: options.body,
      requests: options.requests,
      connections: options.connections,
      pipelining: 1,
      duration,
      timeout: 30,
      setupClient: record
        ? (client) => {
            client.on('response', (_status: number, _bytes: number, responseTime: number) => latencies.push(responseTime));
          }
        : undefined,
    });
    return { result, latencies };
  };
  const warmup = options.warmup ?? WARMUP;
  if (warmup > 0) await run(warmup, false);
  await options.beforeMeasuredRun?.();
  const loadBefore = os.loadavg()[0];
  const { result, latencies } = await run(options.duration ?? DURATION, true);
  latencies.sort((a, b) => a - b);
  return {
    label,
    connections: options.connections,
    requests: result.requests.total,
    rps: result.requests.total / (result.duration || 1),
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    max: latencies.at(-1) ?? Number.NaN,
    errors: result.non2xx + result.errors + result.timeouts,
    load: `${loadBefore.toFixed(1)}→${os.loadavg()[0].toFixed(1)}`,
  };
}

/** One request, checked: a benchmark of error answers would measure nothing. */
export async function probe(
  url: string,
  init: RequestInit,
  check: (status: number, body: unknown) => string | undefined,
): Promise<unknown> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON; the check sees the text
  }
  const problem = check(response.status, body);
  if (problem) throw new Error(`${url}: ${problem}\n${text.slice(0, 2000)}`);
  return body;
}

// ------------------------------------------------------------------ reporting

export function f(n: number, digits = 1): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '-';
}

export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const align = headers.map((h) => (h.startsWith('>') ? '---:' : '---'));
  const names = headers.map((h) => h.replace(/^>/, ''));
  return [`| ${names.join(' | ')} |`, `| ${align.join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export function loadResultRow(r: LoadResult, extra: Array<string | number> = []): Array<string | number> {
  return [r.label, r.connections, r.requests, f(r.rps, 0), `${f(r.p50)} / ${f(r.p95)} / ${f(r.p99)}`, r.errors, ...extra, r.load];
}

export const LOAD_HEADERS = ['target', '>conns', '>requests', '>req/s', 'p50 / p95 / p99 ms', '>errors'];

let cpuModel: string | undefined;
/** What the numbers were measured on: printed above every table. */
export function machine(): string {
  cpuModel ??= os.cpus()[0]?.model?.trim() ?? 'unknown CPU';
  let pg = '';
  try {
    pg = execFileSync('psql', ['--version'], { encoding: 'utf8' })
      .trim()
      .replace(/^psql \(PostgreSQL\) /, 'Postgres ');
  } catch {
    pg = '';
  }
  const [l1, l5, l15] = os.loadavg().map((n) => n.toFixed(2));
  return `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; ${os.cpus().length} × ${cpuModel}; ${Math.round(os.totalmem() / 2 ** 30)} GiB; node ${process.version}${pg ? `; ${pg}` : ''}; load average ${l1} / ${l5} / ${l15}`;
}

export function heading(title: string): void {
  console.log(`\n## ${title}\n\n${machine()}\n`);
}

/**
 * This process's CPU µs per call and the wall ms of `calls` calls of `run(i)`, `inFlight` at a time,
 * after 300 sequential warm-up calls: the cost of one client operation (bench/http-client-cost.ts,
 * bench/prisma-raw-cost.ts).
 */
export async function cpuPerCall(
  run: (i: number) => Promise<unknown>,
  calls: number,
  inFlight: number,
): Promise<{ cpuMicros: number; wallMs: number }> {
  for (let i = 0; i < 300; i++) await run(i);
  const cpu = process.cpuUsage();
  const startedAt = performance.now();
  let left = calls;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (left-- > 0) await run(left);
    }),
  );
  const used = process.cpuUsage(cpu);
  return { cpuMicros: (used.user + used.system) / calls, wallMs: performance.now() - startedAt };
}

/** One way of making the call `cpuPerCall` times. */
export interface CostTarget {
  name: string;
  run: (i: number) => Promise<unknown>;
}

/**
 * `cpuPerCall` of every target, `rounds` times, the order flipped every round so drift does not
 * favour one: a table row (round, target, calls, CPU µs per call, wall ms) per measurement.
 */
export async function cpuPerCallRounds(
  targets: readonly CostTarget[],
  options: { calls: number; inFlight: number; rounds: number },
): Promise<Array<Array<string | number>>> {
  const rows: Array<Array<string | number>> = [];
  for (let round = 1; round <= options.rounds; round++) {
    for (const target of round % 2 === 1 ? targets : [...targets].reverse()) {
      const { cpuMicros, wallMs } = await cpuPerCall(target.run, options.calls, options.inFlight);
      rows.push([round, target.name, options.calls, cpuMicros.toFixed(0), wallMs.toFixed(0)]);
    }
  }
  return rows;
}
