// Run in the image's production-dependency stage, after `npm ci --omit=dev --omit=optional`:
// removes from node_modules what the runtime never loads, and prints the bytes before and after.
//
// - source maps and TypeScript declarations (nothing at run time reads them);
// - the ES module copies OpenTelemetry packages ship beside their CommonJS build (`build/esm`,
//   `build/esnext`): Node resolves them through `main`/`require`, and Apollo Gateway's own
//   OpenTelemetry dependencies bring three or four nested copies of each;
// - Prisma's query compilers for the databases this service does not use (only PostgreSQL);
// - development-only packages `npm ci --omit=dev` still installs because a production package
//   names them as dependencies: the `@types` scope (declarations only; nothing requires them);
// - third-party test suites: a `test`, `tests`, `__tests__` or `__mocks__` folder at a package's
//   root (beside its package.json), and `*.test.*` / `*.spec.*` script files anywhere;
// - TypeScript sources some packages ship beside their JavaScript (Node never strips types under
//   node_modules, so it cannot load them), their `.github` folders, and Markdown documents other
//   than licences and notices (README, CHANGELOG).
//
// The deployment test (test/deploy/) runs every part of the image built this way.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(process.argv[2] ?? 'node_modules');
const OTHER_DATABASES = /(?:mysql|sqlserver|cockroachdb|sqlite)/;
const TEST_FOLDERS = new Set(['test', 'tests', '__tests__', '__mocks__']);
const TEST_FILE = /\.(?:test|spec)\.[cm]?[jt]sx?$/;
const TYPESCRIPT = /\.(?:[cm]?ts|tsx)$/;
const LICENCE = /^(?:licen[cs]e|copying|notice|authors|patents)/i;

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

function removableFolder(full, name) {
  const parent = path.dirname(full);
  if (name === '@types') return path.basename(parent) === 'node_modules';
  if (name === '.github') return true;
  // Only beside a package.json: a package of its own called `test` sits in node_modules instead.
  if (TEST_FOLDERS.has(name)) return fs.existsSync(path.join(parent, 'package.json'));
  return (
    (name === 'esm' || name === 'esnext') &&
    full.includes(`${path.sep}@opentelemetry${path.sep}`) &&
    path.basename(parent) === 'build'
  );
}

function removable(full, entry) {
  if (entry.isDirectory()) return removableFolder(full, entry.name);
  const name = entry.name;
  if (name.endsWith('.map') || TYPESCRIPT.test(name) || TEST_FILE.test(name)) return true;
  if (name.toLowerCase().endsWith('.md')) return !LICENCE.test(name);
  return (
    full.includes(path.join('@prisma', 'client', 'runtime')) && name.startsWith('query_compiler') && OTHER_DATABASES.test(name)
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
