import fs from 'node:fs';
import { RELEASED_FILE, readReleasedFile, readSchemaFiles, loadSchemaRegistry, type ReleasedFile } from './registry.js';
import { checkReleased, formatCheck, releaseCurrent } from './release.logic.js';

/**
 * `npm run schemas:check`: fails when a released event schema changed incompatibly (spec: "The
 * schema registry rejects breaking schema changes that lack a new version").
 * `--release` records the current files as released (after the same check).
 * `--released-at <ISO date>` dates newly released versions (default: now).
 */
function main(argv: string[]): number {
  const files = readSchemaFiles();
  // Compiling every schema catches a file Ajv refuses before anything is recorded.
  loadSchemaRegistry();
  const released = readReleasedFile();
  const check = checkReleased(released.schemas, files);
  const report = formatCheck(check);
  if (argv.includes('--release')) {
    const at = argv.includes('--released-at') ? new Date(argv[argv.indexOf('--released-at') + 1]) : new Date();
    if (Number.isNaN(at.getTime())) {
      console.error('--released-at needs an ISO date');
      return 2;
    }
    let schemas;
    try {
      schemas = releaseCurrent(released.schemas, files, at);
    } catch (error) {
      console.error((error as Error).message);
      return 1;
    }
    const next: ReleasedFile = {
      $comment: 'Released event schemas: written by `npm run schemas:check -- --release`, checked by `npm run schemas:check`. Do not edit by hand.',
      schemas,
    };
    fs.writeFileSync(RELEASED_FILE, `${JSON.stringify(next, null, 2)}\n`);
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
