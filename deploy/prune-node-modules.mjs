// Run in the image's production-dependency stage, after `npm ci --omit=dev --omit=optional`:
// removes from node_modules what the runtime never loads, and prints the bytes before and after.
//
// - source maps and TypeScript declarations (nothing at run time reads them);
// - the ES module copies OpenTelemetry packages ship beside their CommonJS build (`build/esm`,
//   `build/esnext`): Node resolves them through `main`/`require`, and Apollo Gateway's own
//   OpenTelemetry dependencies bring three or four nested copies of each;
// - Prisma's query compilers for the databases this service does not use (only PostgreSQL).
//
// The deployment test (test/deploy/) runs every part of the image built this way.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(process.argv[2] ?? 'node_modules');
const OTHER_DATABASES = /(?:mysql|sqlserver|cockroachdb|sqlite)/;

function walk(dir, visit) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (visit(full, entry) === 'skip') continue;
    if (entry.isDirectory()) walk(full, visit);
  }
}

function size(dir) {
  let bytes = 0;
  walk(dir, (full, entry) => {
    if (entry.isFile()) bytes += fs.statSync(full).size;
  });
  return bytes;
}

function removable(full, entry) {
  if (entry.isDirectory()) {
    return (
      (entry.name === 'esm' || entry.name === 'esnext') &&
      full.includes(`${path.sep}@opentelemetry${path.sep}`) &&
      path.basename(path.dirname(full)) === 'build'
    );
  }
  if (/\.(?:map|d\.ts|d\.mts|d\.cts)$/.test(entry.name)) return true;
  return (
    full.includes(path.join('@prisma', 'client', 'runtime')) &&
    entry.name.startsWith('query_compiler') &&
    OTHER_DATABASES.test(entry.name)
  );
}

const before = size(root);
walk(root, (full, entry) => {
  if (!removable(full, entry)) return undefined;
  fs.rmSync(full, { recursive: true, force: true });
  return 'skip';
});
const after = size(root);
const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
console.log(`node_modules: ${mb(before)} -> ${mb(after)} (${mb(before - after)} the runtime never loads removed)`);
