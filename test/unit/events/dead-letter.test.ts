import { describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../../platform/observability/logger.js';
import { AppError } from '../../../platform/errors/errors.js';
import { manualClock } from '../../../platform/clock.js';
import {
  deadLetterHeaders,
  deadLetterMsgId,
  deadLetterSubject,
  headerValue,
} from '../../../events/dead-letters/dead-letter.logic.js';
import { createDeadLetterMonitor } from '../../../events/dead-letters/dead-letter-monitor.js';
import { initialDeadLetterAlertState, nextDeadLetterAlertState } from '../../../events/dead-letters/dead-letter-monitor.logic.js';
import { retryDelayMs } from '../../../events/retry.logic.js';
import { isValidSubject, subjectMatches } from '../../../events/bus/subject.logic.js';

describe('dead-letter headers', () => {
  const base = {
    originalSubject: 'content.play_package.built.v1',
    originalStream: 'CONTENT',
    originalSeq: 42,
    consumer: 'catalog-svc-play-package-built',
    now: new Date('2026-11-21T10:00:00.000Z'),
  };

  it('carries the four spec headers, counting redeliveries in x-retries', () => {
    const error = new AppError('events.permanent_failure', 'course\nnot found');
    const headers = deadLetterHeaders({
      ...base,
      deliveryCount: 6,
      error,
      eventId: 'E1',
      eventType: 'content.play_package.built',
      traceparent: 'tp',
    });
    expect(headers).toMatchObject({
      'x-original-subject': 'content.play_package.built.v1',
      'x-error': 'events.permanent_failure: course | not found',
      'x-retries': '5',
      'x-deliveries': '6',
      'x-dead-lettered-at': '2026-11-21T10:00:00.000Z',
      'x-event-id': 'E1',
      'x-event-type': 'content.play_package.built',
      'x-consumer': 'catalog-svc-play-package-built',
      'x-original-stream': 'CONTENT',
      'x-original-seq': '42',
      traceparent: 'tp',
    });
    expect(headers['x-stack']).toMatch(/^AppError: course \| not found \| at /);
    expect(Object.values(headers).every((v) => !/[\r\n]/.test(v))).toBe(true);
    expect(deadLetterHeaders({ ...base, deliveryCount: 1, error: 'boom' })).toMatchObject({
      'x-retries': '0',
      'x-error': 'boom',
    });
  });

  it('truncates long values', () => {
    const headers = deadLetterHeaders({ ...base, deliveryCount: 1, error: new Error('x'.repeat(5_000)) });
    expect(headers['x-error']).toHaveLength(500);
    expect(headers['x-error'].endsWith('…')).toBe(true);
    expect(headers['x-stack'].length).toBeLessThanOrEqual(2_000);
    expect(headerValue('a\r\n  b', 10)).toBe('a | b');
  });

  it('names the DLQ subject and message id', () => {
    expect(deadLetterSubject('CATALOG.dlq', 'content.play_package.built.v1')).toBe('CATALOG.dlq.content.play_package.built.v1');
    expect(deadLetterMsgId('c', 'CONTENT', 7)).toBe('dlq.CONTENT.c.7');
  });
});

describe('DLQ alert', () => {
  const tenMinutes = 10 * 60_000;
  const t0 = new Date('2026-11-21T10:00:00Z');
  const plus = (min: number) => new Date(t0.getTime() + min * 60_000);

  it('alerts while the oldest letter is older than the threshold, and clears when none is', () => {
    let step = nextDeadLetterAlertState(undefined, { depth: 2, oldestAt: t0 }, plus(10), tenMinutes);
    expect(step).toEqual({
      state: { depth: 2, oldestLetterAt: t0.toISOString(), oldestLetterAgeSeconds: 600, alerting: false },
      transition: undefined,
    });
    step = nextDeadLetterAlertState(step.state, { depth: 2, oldestAt: t0 }, plus(10.01), tenMinutes);
    expect(step).toMatchObject({ state: { alerting: true }, transition: 'raised' });
    step = nextDeadLetterAlertState(step.state, { depth: 3, oldestAt: t0 }, plus(30), tenMinutes);
    expect(step).toMatchObject({ state: { alerting: true, oldestLetterAgeSeconds: 1800 }, transition: undefined });
    // The old letter was replayed; a young one is left: the DLQ is not stuck, so no alert.
    step = nextDeadLetterAlertState(step.state, { depth: 1, oldestAt: plus(29) }, plus(31), tenMinutes);
    expect(step).toMatchObject({ state: { depth: 1, alerting: false, oldestLetterAgeSeconds: 120 }, transition: 'cleared' });
    step = nextDeadLetterAlertState(step.state, { depth: 0 }, plus(32), tenMinutes);
    expect(step).toEqual({ state: initialDeadLetterAlertState, transition: undefined });
  });

  it('is judged from the stream alone: a process that just (re)started alerts at its first sample, and announces nothing', () => {
    const restarted = nextDeadLetterAlertState(undefined, { depth: 1, oldestAt: t0 }, plus(11), tenMinutes);
    expect(restarted).toEqual({
      state: { depth: 1, oldestLetterAt: t0.toISOString(), oldestLetterAgeSeconds: 660, alerting: true },
      transition: undefined,
    });
  });

  it('monitors of two replicas, started apart and restarted, agree; only the announcing one logs, once', async () => {
    const clock = manualClock(t0);
    let sample: { depth: number; oldestAt?: Date } = { depth: 1, oldestAt: t0 };
    const logger = silentLogger.child({});
    const error = vi.spyOn(logger, 'error');
    const replica = (announces: boolean) =>
      createDeadLetterMonitor({
        sample: async () => sample,
        alertAfterMs: tenMinutes,
        logger,
        clock,
        announces: () => announces,
      });
    const leader = replica(true);
    await leader.check();
    clock.advance(6 * 60_000);
    let other = replica(false);
    await other.check();
    clock.advance(5 * 60_000);
    await Promise.all([leader.check(), other.check()]);
    expect([leader.alerting, other.alerting]).toEqual([true, true]);
    // A restart every few minutes neither resets nor repeats it.
    other = replica(false);
    await other.check();
    expect(other.state()).toEqual(leader.state());
    expect(other.state()).toMatchObject({ alerting: true, oldestLetterAgeSeconds: 660 });
    expect(error).toHaveBeenCalledTimes(1);
    expect(error.mock.calls[0][0]).toMatchObject({ alert: 'dlq_depth', depth: 1, oldestLetterAt: t0.toISOString() });
    sample = { depth: 0 };
    await Promise.all([leader.check(), other.check()]);
    expect([leader.alerting, other.alerting]).toEqual([false, false]);
  });

  it("brings the last sample's age up to the time it is read", async () => {
    const clock = manualClock(t0);
    const monitor = createDeadLetterMonitor({
      sample: async () => ({ depth: 1, oldestAt: t0 }),
      alertAfterMs: tenMinutes,
      logger: silentLogger,
      clock,
    });
    await monitor.check();
    expect(monitor.state()).toMatchObject({ oldestLetterAgeSeconds: 0, alerting: false });
    clock.advance(11 * 60_000);
    expect(monitor.state()).toMatchObject({ oldestLetterAgeSeconds: 660, alerting: true });
  });
});

describe('retry delay', () => {
  it('doubles per attempt up to the cap, with jitter in the upper half', () => {
    const opts = { baseMs: 1_000, maxMs: 60_000 };
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, opts, () => 0))).toEqual([500, 1_000, 2_000, 4_000]);
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, opts, () => 1))).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(retryDelayMs(30, opts, () => 1)).toBe(60_000);
  });
});

describe('subjects', () => {
  it('matches NATS wildcards', () => {
    expect(subjectMatches('catalog.>', 'catalog.course.registered.v1')).toBe(true);
    expect(subjectMatches('catalog.>', 'catalog')).toBe(false);
    expect(subjectMatches('catalog.*.registered.v1', 'catalog.course.registered.v1')).toBe(true);
    expect(subjectMatches('catalog.*', 'catalog.course.registered')).toBe(false);
    expect(subjectMatches('CATALOG.dlq.>', 'catalog.dlq.x')).toBe(false);
    expect(subjectMatches('a.b', 'a.b')).toBe(true);
    expect(subjectMatches('a.b', 'a.b.c')).toBe(false);
  });

  it('knows legal subjects: catalog.>.dlq is not one', () => {
    expect(isValidSubject('CATALOG.dlq.>', true)).toBe(true);
    expect(isValidSubject('catalog.>.dlq', true)).toBe(false);
    expect(isValidSubject('catalog.*', false)).toBe(false);
    expect(isValidSubject('catalog..x')).toBe(false);
  });
});
