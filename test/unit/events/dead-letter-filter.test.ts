import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors/errors.js';
import { validateDeadLetterFilter } from '../../../subgraphs/catalog/dead-letters/dead-letter.logic.js';

/** The replay filter of replayDeadLetters / POST /admin/v1/catalog/dlq/replay. */
describe('DLQ replay filter', () => {
  it('refuses a replay that selects nothing, with a 400 of its own code', () => {
    for (const input of [{}, { maxCount: 5 }, { dryRun: false }, { subject: null, eventIds: null }]) {
      let thrown: unknown;
      try {
        validateDeadLetterFilter(input);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(input)).toBeInstanceOf(AppError);
      expect(thrown).toMatchObject({ code: 'events.replay_filter_required', status: 400, details: { field: 'filter' } });
    }
  });

  it('takes any selecting member, subject ">" as "every letter", and a dry run without one', () => {
    expect(validateDeadLetterFilter({ subject: '>' })).toEqual({ subject: '>', maxCount: 1000, dryRun: false });
    expect(validateDeadLetterFilter({ eventType: 'content.play_package.built', maxCount: 3 })).toMatchObject({ maxCount: 3 });
    expect(validateDeadLetterFilter({ from: new Date('2026-11-01T00:00:00Z') })).toHaveProperty('from');
    expect(validateDeadLetterFilter({ eventIds: ['e1'] })).toHaveProperty('eventIds', ['e1']);
    expect(validateDeadLetterFilter({ dryRun: true })).toEqual({ maxCount: 1000, dryRun: true });
  });

  it('reports a malformed member before a missing one', () => {
    expect(() => validateDeadLetterFilter({ maxCount: 5000 })).toThrow(/filter.maxCount/);
  });
});
