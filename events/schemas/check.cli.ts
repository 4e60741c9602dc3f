import fs from 'node:fs';
import path from 'node:path';
import {
  SCHEMAS_DIR,
  isReaderCopy,
  readReleasedFile,
  readSchemaFiles,
  loadSchemaRegistry,
  type ReleasedFile,
} from './registry.js';
import { checkReleased, formatCheck, releaseCurrent } from './release.logic.js';

/**
 * `npm run schemas:check`: fails when a released event schema changed incompatibly (spec: "The
 * schema registry rejects breaking schema changes that lack a new version").
 * `--release` records the current files as released (after the same check).
 * `--released-at <ISO date>` dates newly released versions (default: now).
 * `--dir <folder>` checks another schema folder (with its own released.json); tests use it.
 */
function main(argv: string[]): number {
  const option = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
  const dir = path.resolve(option('--dir') ?? SCHEMAS_DIR);
  const releasedFile = path.join(dir, 'released.json');
  let files;
  try {
    files = readSchemaFiles(dir);
    // Compiling every schema catches a file Ajv refuses before anything is recorded.
    loadSchemaRegistry({ dir });
  } catch (error) {
    console.error(`INVALID schema: ${(error as Error).message}`);
    return 1;
  }
  const released = readReleasedFile(releasedFile);
  const check = checkReleased(released.schemas, files, { readerCopy: isReaderCopy });
  const report = formatCheck(check);
  if (argv.includes('--release')) {
    const at = new Date(option('--released-at') ?? Date.now());
    if (Number.isNaN(at.getTime())) {
      console.error('--released-at needs an ISO date');
      return 2;
    }
    let schemas;
    try {
      schemas = releaseCurrent(released.schemas, files, at, { readerCopy: isReaderCopy });
    } catch (error) {
      console.error((error as Error).message);
      return 1;
    }
    const next: ReleasedFile = {
      $comment:
        'Released event schemas: written by `npm run schemas:check -- --release`, checked by `npm run schemas:check`. Do not edit by hand.',
      schemas,
    };
    fs.writeFileSync(releasedFile, `${JSON.stringify(next, null, 2)}\n`);
    console.log(`released.json now records ${schemas.length} schema versions`);
    return 0;
  }
  if (check.breaking.length) {
    console.error(report);
    return 1;
  }
  if (report) console.log(report);
  console.log(`schemas OK: ${files.length} schema versions, ${released.schemas.length} released, none changed incompatibly`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
