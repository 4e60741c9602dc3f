import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project's folder: the nearest one above this module that holds package.json. Files the code
 * reads at run time (event schemas, SQL migrations, the committed supergraph) stay where they are
 * committed and are found from here, so the sources run by tsx and the build in dist/ read the
 * very same files and nothing has to be copied next to the compiled code.
 */
export const PROJECT_ROOT = findProjectRoot(path.dirname(fileURLToPath(import.meta.url)));

/**
 * Every file or folder the code reads from the project folder at run time: what a production image
 * must hold next to dist/ and the production node_modules (docs/operations.md).
 */
export const RUNTIME_FILES = {
  migrations: 'prisma/migrations',
  eventSchemas: 'events/schemas',
  supergraph: 'gateway/supergraph.graphql',
} as const;

/** A path inside the project folder, e.g. `projectPath(RUNTIME_FILES.migrations)`. */
export function projectPath(...segments: string[]): string {
  return path.join(PROJECT_ROOT, ...segments);
}

function findProjectRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`No package.json in ${from} or above it: the project folder is incomplete`);
  }
}
