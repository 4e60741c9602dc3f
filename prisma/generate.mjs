// `prisma generate` needs no schema engine, but the CLI insists on one existing file before it
// starts (design notes §3): point it at this script when none is configured.
//
// The Prisma CLI is a development dependency: a production install (`npm ci --omit=dev`) runs this
// postinstall without it and has nothing to generate, because the client is compiled into dist/ by
// `npm run build`. The CLI runs on this process's Node (the pinned one under npm scripts), never
// through npx, which would download a CLI when none is installed.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const schema = fileURLToPath(new URL('./schema.prisma', import.meta.url));
// A production folder (package.json, node_modules, dist/) has no schema to generate from: npm
// installs the Prisma CLI there anyway, as an optional peer of @prisma/client, under --omit=dev.
if (!existsSync(schema)) {
  console.log('prisma generate skipped: no prisma/schema.prisma here (production install; dist/ holds the client)');
  process.exit(0);
}
let cli;
try {
  cli = path.join(path.dirname(require.resolve('prisma/package.json')), 'build', 'index.js');
} catch {
  console.log('prisma generate skipped: the Prisma CLI is not installed (production install; dist/ holds the client)');
  process.exit(0);
}

const env = { ...process.env };
env.PRISMA_SCHEMA_ENGINE_BINARY ??= fileURLToPath(import.meta.url);
env.PRISMA_HIDE_UPDATE_MESSAGE = '1';
const result = spawnSync(process.execPath, [cli, 'generate'], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
