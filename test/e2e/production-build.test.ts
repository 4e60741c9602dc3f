import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { isBuiltin } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/ids.js';
import { RUNTIME_FILES } from '../../platform/project-files.js';
import { freePort, processDataDir } from '../support/child-env.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { builtEntry, spawnBuiltEntry, waitForHttp, type EntryProcess } from '../support/entry-process.js';
import { privateServicesAvailable, startPrivateNats, type PrivateNats } from '../support/private-services.js';
import { realService } from '../support/services.js';

/**
 * `npm run build`, then the production entry points as a platform team runs them: plain
 * `node dist/...`, no tsx, no NODE_PATH, nothing loaded from a development-only package.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};
const TENANT = newId('tenant');
const QUERY = '{ courses(first: 1) { edges { node { courseId } } } routingRules { tenantId } }';

/** Bare module specifiers (packages) a compiled file imports, statically or dynamically. */
function importedPackages(source: string): string[] {
  const specifiers = [
    // `from` after a space or a brace: a string 'from' in a list (['from', 'to']) is not an import.
    ...source.matchAll(/^\s*(?:import|export)\b[^;]*?[\s}]from\s*['"]([^'"\n]+)['"]/gm),
    ...source.matchAll(/^\s*import\s*['"]([^'"\n]+)['"]/gm),
    ...source.matchAll(/\bimport\(\s*['"]([^'"\n]+)['"]\s*\)/g),
    ...source.matchAll(/\brequire(?:\.resolve)?\(\s*['"]([^'"\n]+)['"]\s*\)/g),
  ].map((match) => match[1]);
  return specifiers
    .filter((s) => !s.startsWith('.') && !s.startsWith('/') && !isBuiltin(s))
    .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]));
}

function builtFiles(dir = path.join(ROOT, 'dist')): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return builtFiles(full);
    return entry.name.endsWith('.js') ? [full] : [];
  });
}

async function mintWithBuiltCli(dataDir: string, root = ROOT): Promise<string> {
  const { stdout } = await run(
    process.execPath,
    [builtEntry('platform/auth/mint-token.cli.ts'), '--tenant', TENANT, '--scope', 'catalog.read ai.admin'],
    { cwd: root, env: { ...process.env, DATA_DIR: dataDir, NODE_PATH: '', NODE_OPTIONS: '' } },
  );
  return stdout.trim();
}

/**
 * A folder holding only what docs/operations.md says a production image holds: package.json, the
 * build, the run-time files the code reads (RUNTIME_FILES) and node_modules (linked: installing
 * would take minutes; the dev-only guard still reports any development package loaded).
 */
function imageLayout(): string {
  const image = fs.mkdtempSync(path.join(os.tmpdir(), 'production-image-'));
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(image, 'package.json'));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(image, 'node_modules'));
  for (const file of ['dist', ...Object.values(RUNTIME_FILES)]) {
    fs.cpSync(path.join(ROOT, file), path.join(image, file), { recursive: true });
  }
  return image;
}

async function firstQuery(baseUrl: string, token: string) {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'x-tenant-id': TENANT, 'content-type': 'application/json' },
    body: JSON.stringify({ query: QUERY }),
  });
  return { status: response.status, body: (await response.json()) as { data?: unknown; errors?: unknown } };
}

function expectNoDevOnlyModule(processes: EntryProcess[]) {
  for (const p of processes) expect(p.output()).not.toContain('[dev-only module]');
}

beforeAll(async () => {
  await run('npm', ['run', 'build'], { cwd: ROOT, env: process.env });
}, 180_000);

describe('the production build', () => {
  it('compiles every entry point, and the compiled code imports only production dependencies', () => {
    for (const entry of [
      'main.ts',
      'processes/gateway.main.ts',
      'processes/catalog.main.ts',
      'processes/ai.main.ts',
      'processes/worker.main.ts',
      'prisma/migrate.cli.ts',
      'platform/auth/mint-token.cli.ts',
    ]) {
      expect(fs.existsSync(path.join(ROOT, builtEntry(entry))), entry).toBe(true);
    }
    const imported = new Set(builtFiles().flatMap((file) => importedPackages(fs.readFileSync(file, 'utf8'))));
    expect(imported).toContain('@prisma/client');
    const notProduction = [...imported].filter((name) => !(name in manifest.dependencies));
    expect(notProduction).toEqual([]);
  });

  describe('one process: node dist/main.js on its embedded defaults, from a production image layout', () => {
    let dataDir: string;
    let image: string;
    let system: EntryProcess | undefined;
    let baseUrl: string;

    beforeAll(async () => {
      dataDir = processDataDir('production-build-');
      image = imageLayout();
      const [port, catalogPort, aiPort] = [await freePort(), await freePort(), await freePort()];
      baseUrl = `http://127.0.0.1:${port}`;
      system = spawnBuiltEntry(
        'main.ts',
        { PORT: String(port), CATALOG_PORT: String(catalogPort), AI_PORT: String(aiPort), DATA_DIR: dataDir },
        { root: image },
      );
      await waitForHttp(system, `${baseUrl}/readyz`, 'node dist/main.js');
    });
    afterAll(async () => {
      await system?.kill('SIGTERM');
      for (const dir of [dataDir, image]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it('is ready, answers a query with a token from the built token CLI, serves GraphiQL, stops cleanly', async () => {
      const token = await mintWithBuiltCli(dataDir, image);
      const answer = await firstQuery(baseUrl, token);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.errors).toBeUndefined();
      expect(answer.body.data).toMatchObject({ courses: { edges: [] } });
      for (const asset of ['react.js', 'react-dom.js', 'graphiql.js', 'graphiql.css']) {
        expect((await fetch(`${baseUrl}/graphiql/assets/${asset}`)).status, asset).toBe(200);
      }
      expect(system!.output()).toContain(`Node ${process.version}`);
      expect(await system!.kill('SIGTERM')).toBe(0);
      expectNoDevOnlyModule([system!]);
    });
  });

  const redisUrl = realService('REDIS_URL');
  const natsBinary = privateServicesAvailable('production-build (separate processes)', ['nats-server']);

  // JetStream streams are server-wide, so the parts get a nats-server of their own (the machine's
  // binary on a free port) rather than streams named like production ones on the shared server.
  describe.runIf(redisUrl && natsBinary)('each part as its own process on real services', () => {
    let db: TestDatabase;
    let nats: PrivateNats;
    let dataDir: string;
    const parts: EntryProcess[] = [];
    const ports = { gateway: 0, catalog: 0, ai: 0, metrics: 0 };

    beforeAll(async () => {
      db = await createTestDatabase(undefined, { migrate: false });
      nats = await startPrivateNats();
      dataDir = processDataDir('production-build-parts-');
      for (const name of Object.keys(ports) as Array<keyof typeof ports>) ports[name] = await freePort();
    });
    afterAll(async () => {
      for (const part of parts) await part.kill('SIGTERM');
      await nats?.destroy();
      await db?.close();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it('migrates with the built CLI, then serves a query through the gateway over both subgraphs', async () => {
      const common = { DATABASE_URL: db.url, NATS_URL: nats.url, REDIS_URL: redisUrl, DATA_DIR: dataDir, LOG_LEVEL: 'info' };
      const migrate = spawnBuiltEntry('prisma/migrate.cli.ts', common);
      expect(await migrate.exited, migrate.output()).toBe(0);
      expect(migrate.output()).toContain('migrations applied');
      // The development key is made once here, before the parts read it.
      const token = await mintWithBuiltCli(dataDir);

      const catalogUrl = `http://127.0.0.1:${ports.catalog}`;
      const aiUrl = `http://127.0.0.1:${ports.ai}`;
      const gatewayUrl = `http://127.0.0.1:${ports.gateway}`;
      const catalog = spawnBuiltEntry('processes/catalog.main.ts', { ...common, CATALOG_PORT: String(ports.catalog) });
      const ai = spawnBuiltEntry('processes/ai.main.ts', { ...common, AI_PORT: String(ports.ai) });
      const worker = spawnBuiltEntry('processes/worker.main.ts', { ...common, METRICS_PORT: String(ports.metrics) });
      parts.push(catalog, ai, worker);
      await waitForHttp(catalog, `${catalogUrl}/healthz`, 'node dist/processes/catalog.main.js');
      await waitForHttp(ai, `${aiUrl}/healthz`, 'node dist/processes/ai.main.js');
      await waitForHttp(worker, `http://127.0.0.1:${ports.metrics}/readyz`, 'node dist/processes/worker.main.js');
      const gateway = spawnBuiltEntry('processes/gateway.main.ts', {
        ...common,
        PORT: String(ports.gateway),
        CATALOG_URL: `${catalogUrl}/graphql`,
        AI_URL: `${aiUrl}/graphql`,
      });
      parts.push(gateway);
      await waitForHttp(gateway, `${gatewayUrl}/readyz`, 'node dist/processes/gateway.main.js');

      const answer = await firstQuery(gatewayUrl, token);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.errors).toBeUndefined();
      expect(answer.body.data).toMatchObject({ courses: { edges: [] } });
      expect((answer.body.data as { routingRules: Array<{ tenantId: string | null }> }).routingRules).toContainEqual({
        tenantId: null,
      });
      for (const part of parts) expect(await part.kill('SIGTERM'), part.output()).toBe(0);
      expectNoDevOnlyModule([migrate, ...parts]);
    });
  });
});
