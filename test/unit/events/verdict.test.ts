import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors/errors.js';
import { relativeStack, deadLetterHeaders } from '../../../events/dead-letters/dead-letter.logic.js';
import {
  databaseUnreachable,
  isPermanent,
  permanentFailure,
  sqlStateOf,
  verdictFor,
} from '../../../events/consume/verdict.logic.js';

/** A Prisma error as the pg driver adapter raises it (shape observed on Postgres). */
function prismaError(sqlState: string, message = 'Raw query failed') {
  return Object.assign(new Error(message), {
    code: 'P2010',
    meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { originalCode: sqlState, kind: 'postgres' } } },
  });
}

const policy = { maxDeliver: 6, retryDelayMs: (n: number) => n * 100 };

describe('verdictFor', () => {
  it('acks a success', () => {
    expect(verdictFor(undefined, 1, policy)).toEqual({ kind: 'ack' });
  });

  it('dead-letters data exceptions and constraint violations (SQLSTATE classes 22, 23) on the first delivery', () => {
    for (const state of ['22P05', '22021', '22001', '23505', '23503', '23502']) {
      expect(verdictFor(prismaError(state), 1, policy), state).toEqual({ kind: 'deadLetter', reason: 'permanent' });
    }
    // node-postgres' own error carries the SQLSTATE in `code`; Prisma's mapped codes count too.
    expect(verdictFor(Object.assign(new Error('dup'), { code: '23505' }), 1, policy).kind).toBe('deadLetter');
    expect(verdictFor(Object.assign(new Error('too long'), { code: 'P2000' }), 1, policy).kind).toBe('deadLetter');
  });

  it('dead-letters the events and schema errors no retry fixes, and retries anything else until the last delivery', () => {
    expect(verdictFor(permanentFailure('contradiction'), 1, policy)).toEqual({ kind: 'deadLetter', reason: 'permanent' });
    expect(verdictFor(new AppError('schema.invalid_event', 'bad'), 1, policy).kind).toBe('deadLetter');
    expect(verdictFor(new AppError('request.conflict', 'busy'), 2, policy)).toEqual({ kind: 'retry', afterMs: 200 });
    // Serialization failures and deadlocks (class 40) are worth another attempt.
    expect(verdictFor(prismaError('40001'), 1, policy)).toEqual({ kind: 'retry', afterMs: 100 });
    expect(verdictFor(prismaError('40P01'), 5, policy)).toEqual({ kind: 'retry', afterMs: 500 });
    expect(verdictFor(new Error('timeout'), 6, policy)).toEqual({ kind: 'deadLetter', reason: 'deliveries_exhausted' });
  });

  it('holds (no delivery spent) while the database cannot be reached, whatever the delivery count', () => {
    for (const error of [
      prismaError('08006'),
      prismaError('57P01'),
      prismaError('53300'),
      Object.assign(new Error("Can't reach database server"), { code: 'P1001' }),
      new Error('connect ECONNREFUSED 127.0.0.1:5432'),
    ]) {
      expect(databaseUnreachable(error)).toBe(true);
      expect(verdictFor(error, 6, policy)).toEqual({ kind: 'hold' });
    }
  });

  it('reads the SQLSTATE from either error shape and nothing else', () => {
    expect(sqlStateOf(prismaError('22P05'))).toBe('22P05');
    expect(sqlStateOf(Object.assign(new Error('x'), { code: '23505' }))).toBe('23505');
    expect(sqlStateOf(Object.assign(new Error('x'), { code: 'P2010' }))).toBeUndefined();
    expect(sqlStateOf('boom')).toBeUndefined();
    expect(isPermanent(new Error('plain'))).toBe(false);
  });
});

describe('dead-letter stacks', () => {
  it('name frames relative to the project, as paths and as file URLs', () => {
    const stack = [
      'Error: x',
      '    at handle (/srv/app/subgraphs/catalog/use-cases/publish.ts:10:5)',
      '    at file:///srv/app/events/consume/consumer-runner.ts:200:3',
      '    at run (/srv/app/node_modules/pg/lib/client.js:1:1)',
      '    at node:internal/process/task_queues:95:5',
    ].join('\n');
    expect(relativeStack(stack, '/srv/app')).toBe(
      [
        'Error: x',
        '    at handle (subgraphs/catalog/use-cases/publish.ts:10:5)',
        '    at events/consume/consumer-runner.ts:200:3',
        '    at run (node_modules/pg/lib/client.js:1:1)',
        '    at node:internal/process/task_queues:95:5',
      ].join('\n'),
    );
    const error = new Error('boom');
    error.stack = stack;
    const headers = deadLetterHeaders({
      originalSubject: 's.v1',
      originalStream: 'S',
      originalSeq: 1,
      consumer: 'c',
      deliveryCount: 1,
      error,
      now: new Date(0),
      projectRoot: '/srv/app/',
    });
    expect(headers['x-stack']).not.toContain('/srv/app');
    expect(headers['x-stack']).toContain('subgraphs/catalog/use-cases/publish.ts:10:5');
  });
});
