import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { generateEd25519, mintToken, type DevKeyPair } from '../../platform/auth/dev-keys.js';
import { childEnv, freePort, processDataDir } from './child-env.js';
import { createTestDatabase, type TestDatabase } from './database.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface SystemProcess {
  baseUrl: string;
  dataDir: string;
  keys: DevKeyPair;
  pid: number;
  /** A token the process accepts: signed by the key pair it was started with. */
  mintToken(tenantId: string, scopes: string | string[], options?: { subject?: string; ttlSeconds?: number }): Promise<string>;
  /** SIGTERM, then the exit code (SIGKILL after a bound). Removes the data directory it created. */
  stop(): Promise<number | null>;
  /** Sends a signal and resolves on exit, e.g. a crash with SIGKILL. */
  kill(signal: NodeJS.Signals): Promise<number | null>;
  /** The last output of the process, for failure messages. */
  output(): string;
}

export interface StartOptions {
  /** Reuse a key pair (and so tokens) across a restart. */
  keys?: DevKeyPair;
  /** Reuse a data directory across a restart; it is then not removed on stop. */
  dataDir?: string;
  readyTimeoutMs?: number;
}

/**
 * A fresh DATA_DIR for a system process. Searchable by every account: without DATABASE_URL the
 * process runs the embedded Postgres, which as root runs as the postgres account.
 */
export async function systemDataDir(prefix: string): Promise<string> {
  return processDataDir(prefix);
}

/**
 * Starts `main.ts` as a real process (gateway + REST, both subgraphs, worker) on free ports, with a
 * fresh key pair, and resolves once /readyz answers 200. Pass DATABASE_URL, REDIS_URL, NATS_URL
 * in `env` to use real services; a value of undefined removes a variable.
 */
export async function startSystemProcess(
  env: Record<string, string | undefined> = {},
  options: StartOptions = {},
): Promise<SystemProcess> {
  const keys = options.keys ?? (await generateEd25519());
  const ownsDataDir = !options.dataDir;
  const dataDir = options.dataDir ?? (await systemDataDir('system-e2e-'));
  const [port, catalogPort, aiPort] = [await freePort(), await freePort(), await freePort()];
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'main.ts'], {
    cwd: ROOT,
    env: childEnv({
      HOST: '127.0.0.1',
      PORT: String(port),
      CATALOG_PORT: String(catalogPort),
      AI_PORT: String(aiPort),
      DATA_DIR: dataDir,
      AUTH_PUBLIC_KEY: JSON.stringify(keys.publicJwk),
      LOG_LEVEL: 'warn',
      // Tests play the content, authoring and GDPR services, so they need those streams (with a
      // NATS_URL too); and they see only the rows they make, so no demo catalog unless asked.
      CREATE_PRODUCER_STREAMS: 'true',
      DEMO_DATA: 'false',
      ...env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const record = (chunk: Buffer) => {
    log = (log + chunk.toString('utf8')).slice(-64 * 1024);
  };
  child.stdout?.on('data', record);
  child.stderr?.on('data', record);
  let hasExited = false;
  let signalled = false;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => {
      hasExited = true;
      // A process that dies on its own makes the next request fail with a bare ECONNREFUSED: say why.
      if (!signalled) console.error(`[system-process] pid ${child.pid} exited by itself (${signal ?? `code ${code}`}):\n${log}`);
      resolve(code);
    }),
  );

  const baseUrl = `http://127.0.0.1:${port}`;
  const kill = async (signal: NodeJS.Signals) => {
    signalled = true;
    if (!hasExited) child.kill(signal);
    return exited;
  };
  const removeDataDir = async () => {
    if (ownsDataDir) await fs.rm(dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + (options.readyTimeoutMs ?? 90_000);
  for (;;) {
    const failure = hasExited
      ? 'exited before it was ready'
      : Date.now() > deadline
        ? 'was not ready within the deadline'
        : undefined;
    if (failure) {
      // Nothing of a failed start may outlive the test: the process and the folder it was given.
      await kill('SIGKILL');
      await removeDataDir();
      throw new Error(`The system process ${failure}:\n${log}`);
    }
    const ready = await fetch(`${baseUrl}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  return {
    baseUrl,
    dataDir,
    keys,
    pid: child.pid ?? -1,
    mintToken: (tenantId, scopes, tokenOptions = {}) =>
      mintToken(keys.privateJwk, {
        sub: tokenOptions.subject ?? 'svc:e2e',
        tid: tenantId,
        scope: Array.isArray(scopes) ? scopes.join(' ') : scopes,
        ttlSeconds: tokenOptions.ttlSeconds,
      }),
    async stop() {
      const bound = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await kill('SIGTERM');
      clearTimeout(bound);
      await removeDataDir();
      return code;
    },
    kill,
    output: () => log,
  };
}

/** The variables that point a system process at a test database (also for a restart on it). */
export function databaseEnv(db: TestDatabase): Record<string, string> {
  return { DATABASE_URL: db.url, DB_POOL_SIZE: '8' };
}

export interface SystemWithDatabase {
  /** The process running now (replaced by `restart`). */
  system: SystemProcess;
  db: TestDatabase;
  /** Stops the process and starts a new one on the same database with the same keys. */
  restart(): Promise<SystemProcess>;
  /** Stops the current process and drops the database. */
  close(): Promise<void>;
}

/**
 * A system process on a database the test can also reach: a fresh Postgres database on the server
 * of DATABASE_URL when set, else on the run's embedded Postgres. Use it to arrange rows
 * directly (e.g. 1,000 courses) or to check that nothing changed.
 */
export async function startSystemWithDatabase(
  env: Record<string, string | undefined> = {},
  options: StartOptions = {},
): Promise<SystemWithDatabase> {
  const db = await createTestDatabase();
  try {
    let current = await startSystemProcess({ ...databaseEnv(db), ...env }, options);
    const running: SystemWithDatabase = {
      system: current,
      db,
      restart: async () => {
        await current.stop();
        current = await startSystemProcess({ ...databaseEnv(db), ...env }, { ...options, keys: current.keys });
        running.system = current;
        return current;
      },
      // Stops whichever process runs now: a restarted system is not the one first returned.
      close: async () => {
        await current.stop();
        await db.close();
      },
    };
    return running;
  } catch (error) {
    await db.close();
    throw error;
  }
}
