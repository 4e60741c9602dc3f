import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * deploy/prune-node-modules.mjs, as the image's production-dependency stage runs it, on a
 * node_modules made here: what the runtime never loads goes, everything it loads stays.
 */
const SCRIPT = fileURLToPath(new URL('../../../deploy/prune-node-modules.mjs', import.meta.url));
let dir = '';
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function tree(files: string[]): string {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prune-'));
  for (const file of files) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), file.endsWith('package.json') ? '{}' : 'x');
  }
  return path.join(dir, 'node_modules');
}

function filesUnder(root: string): string[] {
  return (fs.readdirSync(root, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
    .sort();
}

const KEPT = [
  'pkg/package.json',
  'pkg/index.js',
  // A folder called `test` below a package's root may be code the package loads.
  'pkg/lib/test/matcher.js',
  'pkg/lib/testing.js',
  // Licences and notices stay with the code they cover.
  'pkg/LICENSE',
  'pkg/LICENSE.md',
  'pkg/NOTICE.md',
  // A package of its own named `test` (or scoped) is a dependency, not a test suite.
  'test/package.json',
  'test/index.js',
  '@scope/test/package.json',
  '@scope/test/index.js',
  '@opentelemetry/api/package.json',
  '@opentelemetry/api/build/src/index.js',
  '@prisma/client/runtime/query_compiler_bg.postgresql.wasm',
  // pretty-format's schemas are loaded by Apollo's query planner: a dependency, kept.
  '@jest/schemas/package.json',
  '@jest/schemas/build/index.js',
];

const REMOVED = [
  '@types/node/package.json',
  '@types/node/index.d.ts',
  'pkg/node_modules/@types/pg/package.json',
  'pkg/node_modules/@types/pg/index.d.ts',
  'pkg/test/index.js',
  'pkg/tests/fixtures/a.json',
  'pkg/__tests__/parse.js',
  'pkg/__mocks__/fs.js',
  'pkg/lib/parser.test.js',
  'pkg/lib/parser.spec.mjs',
  'pkg/index.js.map',
  'pkg/index.d.ts',
  '@opentelemetry/api/build/esm/index.js',
  '@prisma/client/runtime/query_compiler_bg.mysql.wasm',
  'pkg/README.md',
  'pkg/docs/CHANGELOG.md',
  'pkg/src/index.ts',
  'pkg/src/index.mts',
  'pkg/.github/workflows/ci.yml',
];

describe('deploy/prune-node-modules.mjs', () => {
  it('removes @types packages, third-party test suites, TypeScript, maps, documents and unused engines, and keeps the rest', () => {
    const root = tree([...KEPT, ...REMOVED].map((file) => `node_modules/${file}`));
    const output = execFileSync(process.execPath, [SCRIPT, root], { encoding: 'utf8' });
    expect(output).toMatch(/^node_modules: \d+ MB -> \d+ MB/);
    expect(filesUnder(root)).toEqual([...KEPT].sort());
  });
});
