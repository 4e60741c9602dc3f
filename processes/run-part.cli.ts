// The container image's entry point: `node dist/processes/run-part.cli.js <part>` runs one part
// (Dockerfile ENTRYPOINT; `docker run IMAGE worker`). Each part is the same module `npm run
// start:<part>` runs; `migrate` applies the migrations and exits (a Kubernetes Job, before a rollout);
// `schema-ready` waits until they are applied (an init container of each Deployment).
import { configOrExit } from '../platform/config/config-or-exit.js';
import type { Env } from '../platform/config/env.js';
import { checkedPlatformConfig } from '../platform/config/production.js';

interface Command {
  /** The command's own configuration loader, imported without the command's code. */
  config: () => Promise<(env: Env) => unknown>;
  start: () => Promise<unknown>;
}

const PARTS: Record<string, Command> = {
  gateway: {
    config: async () => (await import('./gateway.config.js')).loadGatewayProcessConfig,
    start: () => import('./gateway.main.js'),
  },
  catalog: {
    config: async () => (await import('./config.js')).loadCatalogProcessConfig,
    start: () => import('./catalog.main.js'),
  },
  ai: { config: async () => (await import('./config.js')).loadAiProcessConfig, start: () => import('./ai.main.js') },
  worker: {
    config: async () => (await import('./config.js')).loadWorkerProcessConfig,
    start: () => import('./worker.main.js'),
  },
  migrate: { config: async () => checkedPlatformConfig('migrate'), start: () => import('../prisma/migrate.cli.js') },
  'schema-ready': {
    config: async () => checkedPlatformConfig('schema-ready'),
    start: () => import('../prisma/schema-ready.cli.js'),
  },
  all: { config: async () => (await import('./config.js')).loadSystemConfig, start: () => import('./system.main.js') },
};

const part = process.argv[2];
const command = part === undefined ? undefined : PARTS[part];
if (!command) {
  console.error(`Usage: run-part <${Object.keys(PARTS).join('|')}>${part === undefined ? '' : ` (got "${part}")`}`);
  process.exit(2);
}
// A refused start (a bad value, a development fallback in production) says its one line before the
// seconds the command's code takes to load, not after: a crash-looping pod tells its reason at once.
// The command checks its configuration again as it starts, the same way.
configOrExit(await command.config());
await command.start();
