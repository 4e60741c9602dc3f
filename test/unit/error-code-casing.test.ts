import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../platform/errors/error-codes.js';
import { codeSites } from '../support/error-code-sites.js';

/**
 * One casing for error codes: ours are lower-case `area.reason` (the spec's
 * `authz.tenant_not_a_member`); only GraphQL's and Apollo's standard codes keep upper case.
 */
const STANDARD_CODES = new Set([
  'BAD_REQUEST',
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

describe('error codes', () => {
  // Where the source gives a code (test/support/error-code-sites.ts), and the registry.
  const codes = [...codeSites(), ...Object.keys(ERROR_CODES).map((code) => ({ file: 'platform/errors/error-codes.ts', code }))];

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
