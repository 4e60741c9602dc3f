import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { formatGraphQLError } from '../../../platform/graphql/format-error.js';
import { silentLogger } from '../../../platform/logger.js';

/** The GraphQL boundary's mapping: only errors known to be the caller's are client errors. */
const format = formatGraphQLError(silentLogger);
const formatted = (error: GraphQLError): GraphQLFormattedError => format(error.toJSON(), error);

describe('formatGraphQLError', () => {
  it('answers an uncoded GraphQLError as INTERNAL_SERVER_ERROR, never BAD_USER_INPUT, and drops its extensions', () => {
    // What Apollo Gateway made of a subgraph's non-2xx answer before gateway/remote-subgraph.ts.
    const error = new GraphQLError('502: Bad Gateway', {
      extensions: { response: { url: 'http://10.0.3.7:4001/graphql', status: 502, body: '<html>nginx</html>' } },
    });
    expect(formatted(error)).toEqual({ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } });
  });

  it("keeps graphql-js's argument coercion errors the caller's mistake (BAD_USER_INPUT)", () => {
    for (const message of [
      'Argument "first" of non-null type "Int!" must not be null.',
      'Argument "courseId" of required type "ID!" was not provided.',
      'Argument "first" has invalid value "x".',
    ]) {
      expect(formatted(new GraphQLError(message, { path: ['courses'] })).extensions).toEqual({ code: 'BAD_USER_INPUT' });
    }
  });

  it("keeps a request error Apollo Server declared 4xx without a code (a persisted query's hash mismatch)", () => {
    const error = new GraphQLError('provided sha does not match query', { extensions: { http: { status: 400 } } });
    expect(formatted(error)).toMatchObject({
      message: 'provided sha does not match query',
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });

  it('passes a coded error forwarded from a subgraph through as it was formatted there', () => {
    const error = new GraphQLError('The ai service is unavailable; fields it serves are null', {
      path: ['provenance'],
      extensions: { code: 'subgraph.unavailable', serviceName: 'ai', status: 503, retryAfterSeconds: 1 },
    });
    expect(formatted(error)).toEqual({
      message: 'The ai service is unavailable; fields it serves are null',
      path: ['provenance'],
      extensions: { code: 'subgraph.unavailable', serviceName: 'ai', status: 503, retryAfterSeconds: 1 },
    });
  });
});
