import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Finds every error code the service's source gives literally, so tests can hold the codes to one
 * casing and to the registry (platform/errors/error-codes.ts). A code built at run time from another
 * code (withProvenance, errorFromGraphQL) is not a new code; the tables of codes below are read
 * by name, and a table that cannot be found fails the scan rather than silently matching nothing.
 */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every folder of the service's own source (test/, bench/ and node_modules are not the service). */
export const SOURCE_FOLDERS = ['platform', 'subgraphs', 'gateway', 'rest-compat', 'events', 'processes'] as const;
const ROOT_FILES = ['main.ts'];

/** Where a code is given: thrown as an AppError, a GraphQL error's extensions, an object member, or compared. */
const CODE_SITES: readonly RegExp[] = [
  /new AppError\(\s*'([^']+)'/g,
  /forbidden\(\s*'([^']+)'/g,
  // `code: 'x'` in an error's extensions, a blocked result, a subgraph's unavailable answer; a
  // log line's own `{ code: … }` (logger.error({ code }, …)) is for operators and is skipped.
  /(?<!(?:logger|log)\.\w+\(\s*\{\s*)\bcode: '([^']+)'/g,
  // A comparison with a code (not `typeof x.code === 'string'`).
  /(?<!typeof [\w?.]*)\bcode === '([^']+)'/g,
  // A provenance record's `errorCode` (only `area.reason` ones; provider attempts have their own words).
  /\berrorCode: '([a-z_]+\.[a-z_]+)'/g,
];

/** Tables of codes given as plain strings: `file` declares `const name = …` whose string literals are codes. */
export const CODE_TABLES = [
  { file: 'platform/graphql/format-error.ts', name: 'CLIENT_CODES' },
  { file: 'platform/graphql/query-limits.ts', name: 'LIMIT_CODES' },
  { file: 'events/consume/verdict.logic.ts', name: 'PERMANENT_CODES' },
  { file: 'subgraphs/ai/provenance/receipts/verify-receipts.ts', name: 'BREAK_CODES' },
] as const;

/** Comparisons with codes that are not ours to emit: a provider's, Node's, Prisma's. */
const FOREIGN_CODE = /^(?:[A-Z]+[0-9]+|E[A-Z]+|UND_ERR_[A-Z_]+|content_filter|content_policy_violation)$/;

export interface CodeSite {
  file: string;
  code: string;
}

export function sourceFiles(): string[] {
  const inFolders = SOURCE_FOLDERS.flatMap((folder) =>
    fs
      .readdirSync(path.join(ROOT, folder), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !file.split(path.sep).includes('node_modules'))
      .map((file) => path.join(folder, file)),
  );
  return [...inFolders, ...ROOT_FILES.filter((file) => fs.existsSync(path.join(ROOT, file)))];
}

function read(file: string): string {
  return fs.readFileSync(path.join(ROOT, file), 'utf8');
}

export function codesIn(file: string, source = read(file)): CodeSite[] {
  return CODE_SITES.flatMap((site) => [...source.matchAll(site)].map((match) => match[1]))
    .filter((code) => !FOREIGN_CODE.test(code))
    .map((code) => ({ file, code }));
}

/** The string literals of `const <name> … = <initializer>;` in the file; throws when it is gone. */
export function codesOfTable(file: string, name: string): CodeSite[] {
  const source = read(file);
  const start = source.search(new RegExp(`const ${name}\\b[^=]*=`));
  if (start < 0) throw new Error(`${file} no longer declares ${name}: update test/support/error-code-sites.ts`);
  const end = source.indexOf(';\n', start);
  const initializer = source.slice(source.indexOf('=', start) + 1, end);
  // Members of an object table are names (`tokens:`); only the values are codes.
  return [...initializer.matchAll(/'([^']+)'(?!\s*:)/g)].map((match) => ({ file, code: match[1] }));
}

/** Every code site of the service's source. */
export function codeSites(): CodeSite[] {
  return [
    ...sourceFiles().flatMap((file) => codesIn(file)),
    ...CODE_TABLES.flatMap(({ file, name }) => codesOfTable(file, name)),
  ];
}
