import { describe, expect, it } from 'vitest';
import { ERASED_USER_ID, ID_PREFIXES, isId, isUlid, newId, randomHex } from '../../platform/ids.js';

describe('identifiers', () => {
  it('mints ids of every kind as prefix + 26 Crockford characters', () => {
    for (const kind of Object.keys(ID_PREFIXES) as Array<keyof typeof ID_PREFIXES>) {
      const id = newId(kind);
      expect(id).toMatch(new RegExp(`^${ID_PREFIXES[kind]}_[0-9A-HJKMNP-TV-Z]{26}$`));
      expect(isId(kind, id)).toBe(true);
    }
  });

  it('rejects the wrong kind, lowercase, excluded letters and wrong length', () => {
    const course = newId('course');
    expect(isId('courseVersion', course)).toBe(false);
    expect(isId('course', course.toLowerCase())).toBe(false);
    expect(isId('course', `crs_${'I'.repeat(26)}`)).toBe(false);
    expect(isId('course', `crs_${'L'.repeat(26)}`)).toBe(false);
    expect(isId('course', `crs_${'O'.repeat(26)}`)).toBe(false);
    expect(isId('course', `crs_${'U'.repeat(26)}`)).toBe(false);
    expect(isId('course', course.slice(0, -1))).toBe(false);
    expect(isId('course', 42)).toBe(false);
  });

  it('sorts ids by creation order', () => {
    const ids = Array.from({ length: 100 }, () => newId('course'));
    expect([...ids].sort()).toEqual(ids);
  });

  it('treats the erased user id as a valid user id and validates bare ULIDs', () => {
    expect(isId('user', ERASED_USER_ID)).toBe(true);
    expect(isUlid(newId('tenant').slice(4))).toBe(true);
    expect(isUlid('not-a-ulid')).toBe(false);
  });

  it('draws trace and span ids as hex from the random pool, never repeating across refills', () => {
    // 1,000 × 24 bytes is several refills of the 4 KiB pool.
    const ids = Array.from({ length: 1_000 }, () => [randomHex(16), randomHex(8)]).flat();
    for (const [i, id] of ids.entries()) expect(id).toMatch(i % 2 === 0 ? /^[0-9a-f]{32}$/ : /^[0-9a-f]{16}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(() => randomHex(5_000)).toThrow(RangeError);
  });
});
