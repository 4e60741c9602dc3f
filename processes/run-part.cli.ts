// The container image's entry point: `node dist/processes/run-part.cli.js <part>` runs one part
// (Dockerfile ENTRYPOINT; `docker run IMAGE worker`). Each part is the same module `npm run
// start:<part>` runs; `migrate` applies the migrations and exits (a Kubernetes Job, before a rollout);
// `schema-ready` waits until they are applied (an init container of each Deployment).
const PARTS: Record<string, () => Promise<unknown>> = {
  gateway: () => import('./gateway.main.js'),
  catalog: () => import('./catalog.main.js'),
  ai: () => import('./ai.main.js'),
  worker: () => import('./worker.main.js'),
  migrate: () => import('../prisma/migrate.cli.js'),
  'schema-ready': () => import('../prisma/schema-ready.cli.js'),
  all: () => import('../main.js'),
};

const part = process.argv[2];
const start = part === undefined ? undefined : PARTS[part];
if (!start) {
  console.error(`Usage: run-part <${Object.keys(PARTS).join('|')}>${part === undefined ? '' : ` (got "${part}")`}`);
  process.exit(2);
}
await start();
