import { describe, expect, it } from 'vitest';
import { GraphQLError } from 'graphql';
import { databaseUnreachable } from '../../../platform/db/unreachable.js';
import { formatGraphQLError } from '../../../platform/graphql/format-error.js';
import { errorReply } from '../../../platform/http/stages/error-replies.js';
import { silentLogger } from '../../../platform/observability/logger.js';

/**
 * What the driver raises when the server ends a session under a request (pg_terminate_backend, a
 * failover), in the shapes observed on Postgres 17 with @prisma/adapter-pg: inside an interactive
 * transaction node-postgres' pooled client refuses the next statement or the commit with a plain
 * Error; a statement running at that moment gets SQLSTATE 57P01 through the adapter.
 */
const notQueryable = () => new Error('Client has encountered a connection error and is not queryable');
const terminated = () =>
  Object.assign(new Error('Raw query failed. Code: `57P01`. Message: `terminating connection due to administrator command`'), {
    code: 'P2010',
    meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { originalCode: '57P01', kind: 'postgres' } } },
  });
const dropped = [
  notQueryable(),
  terminated(),
  new Error('Connection terminated unexpectedly'),
  new Error('Query read timeout'),
  new Error('timeout exceeded when trying to connect'),
  new Error('wrapped', { cause: notQueryable() }),
];

describe('a dropped or failing database connection', () => {
  it('is recognised in every shape the driver raises', () => {
    for (const error of dropped) expect(databaseUnreachable(error), error.message).toBe(true);
    expect(databaseUnreachable(new Error('Unique constraint failed'))).toBe(false);
    expect(databaseUnreachable(undefined)).toBe(false);
  });

  it('is 503 dependency.unavailable with Retry-After at the REST door, as problem+json and as GraphQL errors', () => {
    for (const error of dropped) {
      const problem = errorReply(error, 'problem');
      expect(problem.status).toBe(503);
      expect(problem.headers).toMatchObject({ 'retry-after': '1' });
      expect(JSON.parse(problem.body.toString())).toMatchObject({ code: 'dependency.unavailable', status: 503 });
      const graphql = errorReply(error, 'graphql');
      expect(graphql.status).toBe(503);
      expect(graphql.headers).toMatchObject({ 'retry-after': '1' });
      expect(JSON.parse(graphql.body.toString()).errors[0].extensions).toMatchObject({
        code: 'dependency.unavailable',
        retryAfterSeconds: 1,
      });
    }
  });

  it('is dependency.unavailable in a GraphQL answer (subgraph and gateway), never INTERNAL_SERVER_ERROR', () => {
    const format = formatGraphQLError(silentLogger);
    for (const error of dropped) {
      const wrapped = new GraphQLError('Unexpected error', { originalError: error, path: ['courses'] });
      expect(format({ message: 'Unexpected error', path: ['courses'] }, wrapped).extensions).toMatchObject({
        code: 'dependency.unavailable',
        status: 503,
      });
    }
  });
});
