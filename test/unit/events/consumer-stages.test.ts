import { describe, expect, it } from 'vitest';
import { afterBatchFailure, inStreamOrder, onePerEvent } from '../../../events/consume/consumer-stages.logic.js';
import { keepAliveIntervalMs, orderCandidates } from '../../../events/ordering/pending.logic.js';

const message = (seq: number, eventId: string, key?: string) => ({ m: { seq }, envelope: { eventId }, key });

describe('consumer stages', () => {
  it('restart the ack wait twice per ack wait, never more than ten times a second', () => {
    expect(keepAliveIntervalMs(30_000)).toBe(15_000);
    expect(keepAliveIntervalMs(150)).toBe(100);
  });

  it('take a batch in stream order', () => {
    expect(inStreamOrder([message(7, 'c'), message(3, 'a'), message(5, 'b')]).map(({ m }) => m.seq)).toEqual([3, 5, 7]);
  });

  it('check the order of the messages that have a key, and only those', () => {
    expect(orderCandidates([message(1, 'a', 'course-1'), message(2, 'b'), message(3, 'c', 'course-2')])).toEqual([
      { seq: 1, key: 'course-1' },
      { seq: 3, key: 'course-2' },
    ]);
  });

  it('handle an event delivered twice in one batch once, with its latest delivery, where it first came', () => {
    const batch = [message(1, 'a'), message(2, 'b'), message(3, 'a')];
    expect(onePerEvent(batch).map(({ m, envelope }) => `${envelope.eventId}@${m.seq}`)).toEqual(['a@3', 'b@2']);
  });

  it('wait for the database when a batch failed on it, and otherwise try its messages one at a time', () => {
    const connectionLost = Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
    expect(afterBatchFailure(connectionLost)).toBe('waitForDatabase');
    expect(afterBatchFailure(new Error('a handler bug'))).toBe('oneAtATime');
  });
});
