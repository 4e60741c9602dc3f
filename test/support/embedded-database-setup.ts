import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../platform/db/embedded-postgres.js';
import { silentLogger } from '../../platform/observability/logger.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's embedded Postgres server (empty when DATABASE_URL names the server instead). */
    embeddedDatabaseServerUrl: string;
  }
}

/**
 * Without DATABASE_URL, one embedded Postgres for the project's run — the server `npm start` runs
 * on — on which each test file creates its own database (test/support/database.ts). Throw-away:
 * no fsync, deleted at the end.
 */
export default async function setup(project: TestProject) {
  if (process.env.DATABASE_URL) {
    project.provide('embeddedDatabaseServerUrl', '');
    return;
  }
  // The server may run as another account (as root: postgres): the folder is reachable by all.
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-pg-'));
  fs.chmodSync(parent, 0o755);
  const server = await startEmbeddedPostgres({
    dir: path.join(parent, 'cluster'),
    logger: silentLogger,
    durability: 'throwaway',
  });
  project.provide('embeddedDatabaseServerUrl', server.url);
  return async () => {
    await server.stop();
    fs.rmSync(parent, { recursive: true, force: true });
  };
}
