import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * One casing for error codes: ours are lower-case `area.reason` (the spec's
 * `authz.tenant_not_a_member`); only GraphQL's and Apollo's standard codes keep upper case.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SOURCE_FOLDERS = ['platform', 'subgraphs', 'gateway', 'rest-compat', 'events', 'processes'];
const STANDARD_CODES = new Set([
  'BAD_USER_INPUT',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'INTERNAL_SERVER_ERROR',
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
]);
const OUR_CODE = /^[a-z]+(_[a-z]+)*\.[a-z]+(_[a-z]+)*$/;
/** Where a code is given: thrown as an AppError, a GraphQL error's extensions, or compared. */
const CODE_SITES = [
  /new AppError\(\s*'([^']+)'/g,
  /forbidden\(\s*'([^']+)'/g,
  /extensions: \{\s*code: '([^']+)'/g,
  /AppError[^\n]*?\.code === '([^']+)'/g,
];

function sourceFiles(folder: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => path.join(folder, file));
}

function codesIn(file: string): string[] {
  const source = fs.readFileSync(path.join(ROOT, file), 'utf8');
  return CODE_SITES.flatMap((site) => [...source.matchAll(site)].map((match) => match[1]));
}

describe('error codes', () => {
  const codes = SOURCE_FOLDERS.flatMap(sourceFiles).flatMap((file) => codesIn(file).map((code) => ({ file, code })));

  it('are found where the code gives them', () => {
    expect(codes.map(({ code }) => code)).toEqual(
      expect.arrayContaining(['authz.tenant_not_a_member', 'lifecycle.illegal_transition', 'BAD_USER_INPUT']),
    );
  });

  it('are lower-case area.reason, or a GraphQL standard code', () => {
    const offending = codes.filter(({ code }) => !STANDARD_CODES.has(code) && !OUR_CODE.test(code));
    expect(offending).toEqual([]);
  });
});
