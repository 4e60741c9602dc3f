import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { formatGraphQLError } from '../../../platform/graphql/format-error.js';
import { silentLogger } from '../../../platform/observability/logger.js';

/** The GraphQL boundary's mapping: only errors known to be the caller's are client errors. */
const format = formatGraphQLError(silentLogger);
const formatted = (error: GraphQLError): GraphQLFormattedError => format(error.toJSON(), error);

describe('formatGraphQLError', () => {
  it('answers an uncoded GraphQLError as INTERNAL_SERVER_ERROR, never BAD_USER_INPUT, and drops its extensions', () => {
    // What Apollo Gateway made of a subgraph's non-2xx answer before gateway/subgraph-calls/remote-subgraph.ts.
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

  it("masks a subgraph's error without one of our codes, INTERNAL_SERVER_ERROR included, whatever it says", () => {
    const stacktrace = ['Error: connect postgres://ai:secret@10.0.3.7:5432', '    at connect (/app/db.js:1:1)'];
    for (const extensions of [
      { code: 'INTERNAL_SERVER_ERROR', serviceName: 'ai', exception: { stacktrace } },
      { code: 'DOWNSTREAM_SERVICE_ERROR', serviceName: 'ai' },
      { code: 'ECONNREFUSED', serviceName: 'ai', stacktrace },
    ]) {
      const error = new GraphQLError('connect ECONNREFUSED postgres://ai:secret@10.0.3.7:5432', { path: ['assist'], extensions });
      expect(formatted(error)).toEqual({
        message: 'Internal server error',
        path: ['assist'],
        extensions: { code: 'INTERNAL_SERVER_ERROR', serviceName: 'ai' },
      });
    }
  });

  it("keeps only the registry's members of a subgraph's coded error", () => {
    const error = new GraphQLError('At most 3 fallbacks', {
      path: ['updateRoutingRule'],
      extensions: {
        code: 'BAD_USER_INPUT',
        serviceName: 'ai',
        argument: 'fallbacks',
        exception: { stacktrace: ['Error: At most 3 fallbacks'] },
        stacktrace: ['Error: At most 3 fallbacks'],
        internalUrl: 'http://10.0.3.7:4002/graphql',
      },
    });
    expect(formatted(error)).toEqual({
      message: 'At most 3 fallbacks',
      path: ['updateRoutingRule'],
      extensions: { code: 'BAD_USER_INPUT', serviceName: 'ai', argument: 'fallbacks' },
    });
  });
});
