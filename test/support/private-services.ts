import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './child-env.js';
import assert from 'node:assert/strict';
import { eventually } from './eventually.js';

/**
 * Private instances of the machine's own service binaries (nats-server, Postgres, redis-server),
 * each on a free loopback port with its data in a temporary directory, for suites that kill and
 * restart them. Other suites run in parallel against the machine's shared instances, so those are
 * never touched: a fault suite stops only what it started here.
 */

export type ServiceBinary = 'nats-server' | 'postgres' | 'redis-server';

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** The newest /usr/lib/postgresql/<major>/bin holding initdb and pg_ctl, else PATH's. */
function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  const majors = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((d) => /^\d+$/.test(d))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const major of majors) {
    const dir = path.join(root, major, 'bin');
    if (fs.existsSync(path.join(dir, 'initdb')) && fs.existsSync(path.join(dir, 'pg_ctl'))) return dir;
  }
  const initdb = onPath('initdb');
  return initdb && onPath('pg_ctl') ? path.dirname(initdb) : undefined;
}

function binaryPath(name: ServiceBinary): string | undefined {
  if (name === 'postgres') return postgresBinDir();
  if (name === 'nats-server') return fs.existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : onPath('nats-server');
  return onPath('redis-server');
}

/**
 * Gate for a suite that needs private services. Returns true when every binary is present.
 * Otherwise: in CI (CI=true) it throws, failing the file with the names of what is missing;
 * locally it prints one skip line and returns false.
 */
export function privateServicesAvailable(suite: string, needed: ServiceBinary[]): boolean {
  const missing = needed.filter((name) => !binaryPath(name));
  if (missing.length === 0) return true;
  const message = `${suite} needs the machine's ${missing.join(', ')} binar${missing.length > 1 ? 'ies' : 'y'} (Debian packages nats-server, postgresql, redis-server)`;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`[reliability] ${message}; CI must provide them.`);
  console.warn(`[skip] ${message}; install them to run it.`);
  return false;
}

export function portAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A long-running child whose exit is observable; kill() resolves once it has exited. */
class Child {
  private log = '';
  readonly exited: Promise<number | null>;
  private done = false;

  constructor(readonly process: ChildProcess) {
    const record = (chunk: Buffer) => {
      this.log = (this.log + chunk.toString('utf8')).slice(-32 * 1024);
    };
    process.stdout?.on('data', record);
    process.stderr?.on('data', record);
    this.exited = new Promise((resolve) =>
      process.once('exit', (code, signal) => {
        this.done = true;
        resolve(code ?? (signal ? -1 : null));
      }),
    );
  }

  get running(): boolean {
    return !this.done;
  }

  output(): string {
    return this.log;
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    if (this.done) return;
    this.process.kill(signal);
    const bound = setTimeout(() => this.process.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(bound);
  }
}

/** A server binary that can be stopped and started again with the same arguments. */
function restartable(name: string, binary: string, args: string[], ready: () => Promise<boolean>) {
  let child: Child | undefined;
  return {
    running: () => child?.running ?? false,
    output: () => child?.output() ?? '',
    stop: async (signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL') => child?.kill(signal),
    /** SIGSTOP freezes the server with its sockets open (a half-open peer); SIGCONT resumes it. */
    signal: (signal: 'SIGSTOP' | 'SIGCONT') => {
      if (child?.running) child.process.kill(signal);
    },
    async start() {
      if (child?.running) return;
      const current = new Child(spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
      child = current;
      try {
        await eventually(async () => assert.ok(await ready(), `${name} answers:\n${current.output()}`), `${name} to be ready`, {
          timeoutMs: 30_000,
          giveUpWhen: () => (current.running ? undefined : new Error(`${name} exited:\n${current.output()}`)),
        });
      } catch (error) {
        // A server that never became ready must not outlive the suite that gave up on it.
        await current.kill('SIGKILL');
        throw error;
      }
    },
  };
}

export interface PrivateNats {
  url: string;
  port: number;
  storeDir: string;
  running(): boolean;
  /** SIGKILL (a crash) or SIGTERM (a clean stop); the store directory stays. */
  stop(signal?: 'SIGKILL' | 'SIGTERM'): Promise<void>;
  /** SIGSTOP freezes the server with its sockets open (a half-open peer); SIGCONT resumes it. */
  signal(signal: 'SIGSTOP' | 'SIGCONT'): void;
  /** Starts again on the same port and store, and waits until JetStream is ready. */
  start(): Promise<void>;
  /** Stops and removes the store. */
  destroy(): Promise<void>;
  output(): string;
}

/** One nats-server process: its ports, and whether it answers /healthz (JetStream recovered and current). */
function natsServer(binary: string, name: string, port: number, monitorPort: number, args: string[]) {
  return restartable(
    name,
    binary,
    ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-js', ...args],
    // /healthz answers 200 only once JetStream has recovered its streams from the store (and, in
    // a cluster, once the node has caught up with the meta leader).
    () =>
      fetch(`http://127.0.0.1:${monitorPort}/healthz`).then(
        (r) => r.ok,
        () => false,
      ),
  );
}

function natsBinary(): string {
  const binary = binaryPath('nats-server');
  if (!binary) throw new Error('nats-server not found');
  return binary;
}

/**
 * `nats-server -js` with file storage in a temporary directory: a restart keeps every stream,
 * its messages, consumers and their positions, as on a production node with a persistent volume.
 */
export async function startPrivateNats(): Promise<PrivateNats> {
  const binary = natsBinary();
  const [port, monitorPort] = [await freePort(), await freePort()];
  const storeDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'reliability-nats-'));
  const server = natsServer(binary, 'nats-server', port, monitorPort, ['-sd', storeDir]);
  await server.start().catch(async (error) => {
    await fsp.rm(storeDir, { recursive: true, force: true });
    throw error;
  });
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    ...server,
    destroy: async () => {
      await server.stop('SIGKILL');
      await fsp.rm(storeDir, { recursive: true, force: true });
    },
  };
}

export interface PrivateNatsNode extends Omit<PrivateNats, 'destroy'> {
  /** The node's server_name, as stream info names the leader and replicas (`n1`, `n2`, `n3`). */
  name: string;
  monitorPort: number;
}

export interface PrivateNatsCluster {
  /** Every node's client URL, comma-separated: a NATS_URL for the whole cluster. */
  url: string;
  nodes: PrivateNatsNode[];
  /** The node named `name` (the stream info's `cluster.leader`, say). */
  node(name: string): PrivateNatsNode;
  /** Stops every node and removes their stores. */
  destroy(): Promise<void>;
}

/**
 * A JetStream cluster of `size` nodes (default 3) on loopback, as production runs it: each node a
 * nats-server with its own file store, routes to the others, one cluster name. Streams created
 * with replicas 3 survive the loss of any one node. Every port is free and every store is removed
 * by destroy().
 */
export async function startPrivateNatsCluster(size = 3): Promise<PrivateNatsCluster> {
  const binary = natsBinary();
  const root = await fsp.mkdtemp(path.join(os.tmpdir(), 'reliability-nats-cluster-'));
  const ports: Array<{ client: number; monitor: number; route: number }> = [];
  for (let i = 0; i < size; i++) ports.push({ client: await freePort(), monitor: await freePort(), route: await freePort() });
  const routes = ports.map((p) => `nats://127.0.0.1:${p.route}`);
  const clusterName = `private-${path.basename(root).slice(-6)}`;
  const nodes = ports.map((p, i): PrivateNatsNode => {
    const name = `n${i + 1}`;
    const storeDir = path.join(root, name);
    const server = natsServer(binary, `nats-server ${name}`, p.client, p.monitor, [
      '-sd',
      storeDir,
      '--server_name',
      name,
      '--cluster_name',
      clusterName,
      '--cluster',
      routes[i],
      '--routes',
      routes.filter((_, j) => j !== i).join(','),
    ]);
    return { name, url: `nats://127.0.0.1:${p.client}`, port: p.client, monitorPort: p.monitor, storeDir, ...server };
  });
  const destroy = async () => {
    await Promise.all(nodes.map((n) => n.stop('SIGKILL')));
    await fsp.rm(root, { recursive: true, force: true });
  };
  // Together: a node is healthy only once a meta leader is elected, which takes a quorum.
  await Promise.all(nodes.map((n) => n.start())).catch(async (error) => {
    await destroy();
    throw error;
  });
  return {
    url: nodes.map((n) => n.url).join(','),
    nodes,
    node(name) {
      const found = nodes.find((n) => n.name === name);
      if (!found) throw new Error(`no node ${name} in this cluster (${nodes.map((n) => n.name).join(', ')})`);
      return found;
    },
    destroy,
  };
}

export interface PrivatePostgres {
  /** URL of the database created for the suite. */
  url: string;
  port: number;
  running(): Promise<boolean>;
  /** `pg_ctl stop -m immediate`: every backend dies at once, no checkpoint (crash recovery on start). */
  stop(mode?: 'immediate' | 'fast'): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
  log(): string;
}

function asPostgresUser(command: string, args: string[]): { command: string; args: string[] } {
  // initdb and the postmaster refuse to run as root.
  return process.getuid?.() === 0 ? { command: 'runuser', args: ['-u', 'postgres', '--', command, ...args] } : { command, args };
}

function run(command: string, args: string[], what: string): void {
  const invocation = asPostgresUser(command, args);
  const result = spawnSync(invocation.command, invocation.args, { encoding: 'utf8', timeout: 120_000 });
  if (result.status !== 0)
    throw new Error(`${what} failed (${result.status}): ${result.stderr || result.stdout || result.error}`);
}

/**
 * A Postgres cluster of its own (`initdb` into a temporary directory, trust authentication,
 * socket in that directory, TCP on a free loopback port), with one database for the suite.
 * Durability settings stay at Postgres' defaults (fsync and synchronous_commit on).
 */
export async function startPrivatePostgres(
  database = 'reliability',
  /** Server settings beyond these, e.g. `{ track_commit_timestamp: 'on' }`. */
  settings: Record<string, string> = {},
): Promise<PrivatePostgres> {
  const bin = binaryPath('postgres');
  if (!bin) throw new Error('Postgres binaries (initdb, pg_ctl) not found');
  const root = await fsp.mkdtemp(path.join(os.tmpdir(), 'reliability-pg-'));
  if (process.getuid?.() === 0) {
    const user = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const group = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    if (user.status !== 0) throw new Error('running as root, but there is no postgres OS user to run Postgres as');
    await fsp.chown(root, Number(user.stdout.trim()), Number(group.stdout.trim()));
  }
  const dataDir = path.join(root, 'data');
  const logFile = path.join(root, 'postgres.log');
  const port = await freePort();
  const extra = Object.entries(settings).map(([name, value]) => ` -c ${name}=${value}`);
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c max_connections=200${extra.join('')}`;
  const serverUrl = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  const ready = () =>
    new Promise<boolean>((resolve) => {
      const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 1_000 });
      client.on('error', () => undefined);
      client.connect().then(
        () =>
          client.query('SELECT 1').then(
            () =>
              void client.end().then(
                () => resolve(true),
                () => resolve(true),
              ),
            () =>
              void client.end().then(
                () => resolve(false),
                () => resolve(false),
              ),
          ),
        () => resolve(false),
      );
    });
  const log = () => {
    try {
      return fs.readFileSync(logFile, 'utf8').slice(-8 * 1024);
    } catch {
      return '';
    }
  };
  const start = async () => {
    run(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-o', options, '-l', logFile, '-w', '-t', '60', 'start'], 'pg_ctl start');
    await eventually(async () => assert.ok(await ready(), `Postgres answers:\n${log()}`), 'Postgres to accept connections', {
      timeoutMs: 60_000,
    });
  };
  const stop = async (mode: 'immediate' | 'fast' = 'immediate') => {
    run(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-m', mode, '-w', '-t', '60', 'stop'], 'pg_ctl stop');
  };
  const destroy = async () => {
    if (fs.existsSync(path.join(dataDir, 'postmaster.pid'))) await stop('immediate').catch(() => undefined);
    await fsp.rm(root, { recursive: true, force: true });
  };
  try {
    run(path.join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], 'initdb');
    await start();
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${database}"`);
    await admin.end();
  } catch (error) {
    // A cluster that failed to come up must not outlive the suite: its postmaster and its folder.
    await destroy();
    throw error;
  }
  return {
    url: `postgresql://postgres@127.0.0.1:${port}/${database}`,
    port,
    running: ready,
    stop,
    start,
    destroy,
    log,
  };
}

export interface PrivateRedis {
  url: string;
  port: number;
  running(): boolean;
  stop(signal?: 'SIGKILL' | 'SIGTERM'): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/**
 * `redis-server` without persistence on a free loopback port (a restart starts empty, like a cache
 * node); `settings` are more `--name value` pairs, e.g. a `maxmemory` and its policy.
 */
export async function startPrivateRedis(settings: string[] = []): Promise<PrivateRedis> {
  const binary = binaryPath('redis-server');
  if (!binary) throw new Error('redis-server not found');
  const port = await freePort();
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'reliability-redis-'));
  const server = restartable(
    'redis-server',
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...settings],
    () => portAccepts(port),
  );
  await server.start().catch(async (error) => {
    await fsp.rm(dir, { recursive: true, force: true });
    throw error;
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    ...server,
    destroy: async () => {
      await server.stop('SIGKILL');
      await fsp.rm(dir, { recursive: true, force: true });
    },
  };
}
