import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalHash, canonicalJson } from '../../../platform/text/canonical-json.js';

describe('RFC 8785 canonical JSON', () => {
  it('sorts members by UTF-16 code units at every depth and drops whitespace', () => {
    expect(canonicalJson({ b: [3, { z: 1, a: 2 }], a: 'x', A: null })).toBe('{"A":null,"a":"x","b":[3,{"a":2,"z":1}]}');
    // U+20AC sorts after U+00E9 but a surrogate pair (U+1F600) sorts before U+FB33 in UTF-16.
    expect(canonicalJson({ '\u20ac': 1, '\u00e9': 2, '\ufb33': 3, '\ud83d\ude00': 4 })).toBe(
      '{"\u00e9":2,"\u20ac":1,"\ud83d\ude00":4,"\ufb33":3}',
    );
  });

  it('serialises numbers the ECMAScript way (RFC 8785 §3.2.2.3)', () => {
    expect(canonicalJson([1e21, 1e-7, -0, 0.000001, 123456789012345680000, 4.5, 2 ** 53])).toBe(
      '[1e+21,1e-7,0,0.000001,123456789012345680000,4.5,9007199254740992]',
    );
  });

  it('escapes strings minimally', () => {
    expect(canonicalJson('\u0000\b\t\n\f\r"\\/\u001f\u007f é')).toBe('"\\u0000\\b\\t\\n\\f\\r\\"\\\\/\\u001f\u007f é"');
  });

  it('refuses what JSON cannot represent', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow();
    expect(() => canonicalJson(Number.POSITIVE_INFINITY)).toThrow();
    expect(() => canonicalJson('\ud800')).toThrow();
    expect(() => canonicalJson(undefined)).toThrow(TypeError);
  });

  it('reads values as JSON.stringify does: dates as ISO strings, undefined members left out, undefined items null', () => {
    const at = new Date('2026-11-23T10:00:00.000Z');
    expect(canonicalJson({ at, nested: [at] })).toBe('{"at":"2026-11-23T10:00:00.000Z","nested":["2026-11-23T10:00:00.000Z"]}');
    expect(canonicalJson({ skipped: undefined, kept: 1 })).toBe('{"kept":1}');
    expect(canonicalJson([undefined, 1])).toBe('[null,1]');
    // A date and its ISO string are the same value to a hash (both were "{}" before: every date alike).
    expect(canonicalHash({ at })).toBe(canonicalHash({ at: at.toISOString() }));
    expect(canonicalHash({ at })).not.toBe(canonicalHash({ at: new Date('2026-11-24T10:00:00.000Z') }));
  });

  it('digests the canonical form, so layout and member order do not matter', () => {
    const digest = canonicalHash({ b: 1, a: [true] });
    expect(digest).toBe(createHash('sha256').update('{"a":[true],"b":1}').digest('hex'));
    expect(canonicalHash(JSON.parse('{ "a" : [ true ],\n "b": 1.0 }'))).toBe(digest);
    expect(canonicalHash({ a: [true], b: 2 })).not.toBe(digest);
  });
});
