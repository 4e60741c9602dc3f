import { describe, expect, it } from 'vitest';
import { COMMITTED_AT_HEADER, committedAtHeader, committedAtOf } from '../../../events/publish/committed-at.logic.js';

describe('the commit-time header the relay stamps', () => {
  it('carries a known commit time as whole epoch milliseconds, and reads back what it wrote', () => {
    const header = committedAtHeader(1_764_000_000_123.6);
    expect(header).toEqual({ [COMMITTED_AT_HEADER]: '1764000000124' });
    expect(committedAtOf(header)).toBe(1_764_000_000_124);
  });

  it('stamps nothing when the database did not know the commit time', () => {
    expect(committedAtHeader(null)).toEqual({});
    expect(committedAtHeader(undefined)).toEqual({});
    expect(committedAtHeader(Number.NaN)).toEqual({});
  });

  it('reads no time from a message without the header or with one that is not a plain count of milliseconds', () => {
    expect(committedAtOf({})).toBeUndefined();
    for (const text of ['', 'soon', '-5', '1.5', '2026-11-28T10:00:00Z', '9'.repeat(16)]) {
      expect(committedAtOf({ [COMMITTED_AT_HEADER]: text })).toBeUndefined();
    }
  });
});
