import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../platform/config/env.js';
import { embeddedClusterDir } from '../../../platform/db/database.js';
import { reachableBinaries, startEmbeddedPostgres, type EmbeddedPostgres } from '../../../platform/db/embedded-postgres.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { spawnEntry } from '../../support/entry-process.js';

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** A pid no process has: a short child's, after it exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

/**
 * The embedded default database (`npm start` without DATABASE_URL): a real Postgres under
 * DATA_DIR that keeps its data across restarts and is never shared by two running processes.
 */
describe('embedded Postgres under DATA_DIR', () => {
  let dataDir: string;
  let dir: string;
  let server: EmbeddedPostgres | undefined;

  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-data-'));
    // As root the server runs as the postgres account, which must reach the folder.
    fs.chmodSync(dataDir, 0o755);
    dir = embeddedClusterDir(dataDir);
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps what was written across a stop and a start', async () => {
    server = await startEmbeddedPostgres({ dir, logger: silentLogger });
    await query(server.url, 'CREATE TABLE kept (v text)');
    await query(server.url, "INSERT INTO kept VALUES ('still here')");
    await server.stop();
    server = await startEmbeddedPostgres({ dir, logger: silentLogger });
    expect(await query(server.url, 'SELECT v FROM kept')).toEqual([{ v: 'still here' }]);
  });

  it('listens on loopback with a password: no password, no session', async () => {
    const url = new URL(server!.url);
    expect(url.hostname).toBe('127.0.0.1');
    url.password = '';
    await expect(query(url.toString(), 'SELECT 1')).rejects.toThrow(/password/);
  });

  it('refuses a second start on the same DATA_DIR while the first runs, naming DATA_DIR', async () => {
    const second = startEmbeddedPostgres({ dir, logger: silentLogger });
    await expect(second).rejects.toBeInstanceOf(ConfigError);
    await expect(second).rejects.toMatchObject({
      variable: 'DATA_DIR',
      message: expect.stringMatching(/in use by another running process/),
    });
    expect(await query(server!.url, 'SELECT v FROM kept')).toEqual([{ v: 'still here' }]);
  });

  it('a second `npm start` on the same DATA_DIR exits 2 with one line, and the first keeps its data', async () => {
    const second = spawnEntry('main.ts', {
      DATA_DIR: dataDir,
      DATABASE_URL: undefined,
      NATS_URL: undefined,
      REDIS_URL: undefined,
      PORT: '0',
    });
    expect(await second.exited).toBe(2);
    const lines = second
      .output()
      .split('\n')
      .filter((line) => line.trim() && !line.startsWith('{'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^Invalid configuration: DATA_DIR .*in use by another running process/);
    expect(await query(server!.url, 'SELECT v FROM kept')).toEqual([{ v: 'still here' }]);
    // A whole process's start-up (tsx compiling main.ts) on a loaded 2-core machine.
  }, 240_000);

  it('stops a server left running by a process that died, and starts on the same data', async () => {
    // As on a system without a parent-death signal: the owner is gone, its server is not.
    fs.writeFileSync(path.join(dir, 'catalog-ai.owner'), `${await deadPid()}\n`);
    const orphan = server!;
    server = await startEmbeddedPostgres({ dir, logger: silentLogger });
    expect(await query(server.url, 'SELECT v FROM kept')).toEqual([{ v: 'still here' }]);
    await orphan.stop();
  });
});

/**
 * As root the server runs as the postgres account, which must reach the binaries too: a checkout
 * in a folder only root may pass (a `mktemp -d` clone, mode 700) made initdb fail with "cannot
 * open shared object file". The binaries are then used from a copy beside the cluster.
 */
describe.runIf(process.getuid?.() === 0)('embedded Postgres binaries the server account cannot reach (as root)', () => {
  let closed: string;
  let open: string;
  let account: { name: string; uid: number; gid: number };

  beforeAll(async () => {
    // Created by startEmbeddedPostgres when missing; the first suite has run it on this machine.
    account = {
      name: 'postgres',
      uid: Number(execFileSync('id', ['-u', 'postgres'])),
      gid: Number(execFileSync('id', ['-g', 'postgres'])),
    };
    closed = fs.mkdtempSync(path.join(os.tmpdir(), 'closed-checkout-'));
    open = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-parent-'));
    fs.chmodSync(open, 0o755);
    const native = path.dirname(
      path.dirname((await import(`@embedded-postgres/${process.platform}-${process.arch}`)).postgres as string),
    );
    fs.cpSync(native, path.join(closed, 'native'), { recursive: true, verbatimSymlinks: true });
  });
  afterAll(() => {
    for (const dir of [closed, open]) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('runs initdb from a copy the account can reach, where the original cannot even load', async () => {
    const original = { initdb: path.join(closed, 'native/bin/initdb'), postgres: path.join(closed, 'native/bin/postgres') };
    const asAccount = (binary: string) =>
      spawnSync(binary, ['--version'], { uid: account.uid, gid: account.gid, encoding: 'utf8' });
    expect(asAccount(original.initdb).status).not.toBe(0);
    const usable = await reachableBinaries(original, open, account, silentLogger);
    expect(usable.initdb.startsWith(open)).toBe(true);
    const version = asAccount(usable.initdb);
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/initdb \(PostgreSQL\) \d+/);
    // A second start finds the copy made.
    expect(await reachableBinaries(original, open, account, silentLogger)).toEqual(usable);
  });
});
