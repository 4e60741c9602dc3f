import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Every repository path the docs name in code quotes exists: a file moved in a restructuring
 * (gateway/ in rooms, events/ledger/) leaves no reader at a path that is gone.
 */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const DOCS = ['README.md', 'CHANGELOG.md', 'deploy/README.md', 'bench/README.md', ...docsFolder()];
const TOP_FOLDERS = [
  'platform',
  'gateway',
  'subgraphs',
  'events',
  'processes',
  'rest-compat',
  'prisma',
  'test',
  'bench',
  'deploy',
  'docs',
];
const QUOTED_PATH = new RegExp(`\`((?:${TOP_FOLDERS.join('|')})/[A-Za-z0-9_./-]+)\``, 'g');

/** Paths a run or an install makes, named on purpose before they exist. */
const MADE_LATER = new Map([
  ['test/faults/latest-figures.md', 'written by `RECORD_FIGURES=true npm run test:faults`'],
  ['bench/peers/node_modules', 'installed by the peer benchmarks'],
]);

function docsFolder(): string[] {
  return fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
}

function namedPaths(text: string): string[] {
  return [...text.matchAll(QUOTED_PATH)].map((m) => m[1].replace(/[/.]+$/, '')).filter((p) => !/[*<>]/.test(p));
}

describe('paths the docs name', () => {
  it('reads a quoted repository path and leaves other quotes alone', () => {
    expect(namedPaths('see `gateway/front-door/pipeline.ts`, `npm test`, `dist/x.js` and `docs/operations.md`.')).toEqual([
      'gateway/front-door/pipeline.ts',
      'docs/operations.md',
    ]);
  });

  it.each(DOCS)('%s names only paths that exist', (doc) => {
    const text = fs.readFileSync(path.join(ROOT, doc), 'utf8');
    const missing = namedPaths(text).filter((p) => !MADE_LATER.has(p) && !fs.existsSync(path.join(ROOT, p)));
    expect(missing).toEqual([]);
  });
});
