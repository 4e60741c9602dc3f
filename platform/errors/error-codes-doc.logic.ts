import type { ErrorCodeEntry } from './error-codes.js';

export const ERROR_CODES_DOC = 'docs/error-codes.md';

/**
 * docs/error-codes.md from the registry: one row per code, sorted by code so a client looks one up
 * where it expects it. Pure; error-codes-doc.cli.ts formats it with the project's Prettier and
 * writes it, and a unit test fails when the committed file is not what this produces.
 */
export function errorCodesMarkdown(
  codes: Readonly<Record<string, ErrorCodeEntry>>,
  detailMembers: ReadonlyArray<string> = [],
): string {
  const rows = Object.entries(codes)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([code, { status, meaning }]) => `| \`${code}\` | ${status} | ${meaning} |`);
  return [
    '# Error codes',
    '',
    '<!-- Generated from platform/errors/error-codes.ts by `npm run docs:error-codes`: edit the registry, not this file. -->',
    '',
    'Every code the service can emit. REST answers `application/problem+json` (RFC 9457) with the code in',
    'its `code` member and the status as the HTTP status; GraphQL puts the same code in `extensions.code`',
    "(and the status in `extensions.status`). Codes of our own are lower-case `area.reason`; GraphQL's and",
    "Apollo's standard codes keep their own spelling.",
    '',
    'Codes are a contract: a code is never renamed, removed or given another status without an entry in',
    '[CHANGELOG.md](../CHANGELOG.md) (a unit test compares the registry with',
    '`platform/errors/error-codes.snapshot.json` and holds the changelog to it). Which codes each REST route',
    'answers, by status, is in its OpenAPI document (`/openapi.json`, [rest-compat.md](rest-compat.md)).',
    '',
    '| code | status | meaning |',
    '| --- | --- | --- |',
    ...rows,
    '',
    '## Members beside `code` and `status`',
    '',
    "Beside `code`, `status` (and RFC 9457's own members of a REST problem), an error carries only",
    'members of this list (GraphQL: in `extensions`, where an error a subgraph answered also names the',
    'subgraph in `serviceName`). Nothing else — a stack trace, an internal message, an address — is',
    'answered: an error without one of the codes above is `INTERNAL_SERVER_ERROR` with a fixed message,',
    "and its detail is in the service's log under the request's id.",
    '',
    detailMembers.map((member) => `\`${member}\``).join(', '),
    '',
  ].join('\n');
}
