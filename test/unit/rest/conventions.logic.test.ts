import { describe, expect, it } from 'vitest';
import { ifMatchHolds, ifNoneMatchHolds } from '../../../platform/http/conditional.logic.js';
import { errorFromGraphQL } from '../../../rest-compat/graphql-errors.logic.js';
import { mergePatch, metadataInputFromMergePatch, type CourseMetadataValues } from '../../../rest-compat/merge-patch.logic.js';

describe('If-None-Match (RFC 9110 §13.1.2, weak comparison)', () => {
  it('fails (304) when a listed tag matches the current one, weak or strong, or for *', () => {
    for (const header of ['"abc"', 'W/"abc"', '"x", "abc"', 'W/"x" , W/"abc"', '*', ' * ']) {
      expect(ifNoneMatchHolds(header, '"abc"'), header).toBe(false);
    }
    // A current weak tag matches its strong form too: the comparison is weak on both sides.
    expect(ifNoneMatchHolds('"abc"', 'W/"abc"')).toBe(false);
  });

  it('holds (200) when no listed tag matches', () => {
    for (const header of ['"abd"', 'W/"ab"', '"x", "y"', '', '"ABC"'])
      expect(ifNoneMatchHolds(header, '"abc"'), header).toBe(true);
  });
});

describe('If-Match (RFC 9110 §13.1.1, strong comparison)', () => {
  it('holds for the current tag in a list, its bare form (GraphQL clients) and *', () => {
    for (const header of ['"abc"', '"x", "abc"', 'abc', '*']) expect(ifMatchHolds(header, '"abc"'), header).toBe(true);
  });

  it('fails for a weak tag, another tag and an empty header', () => {
    for (const header of ['W/"abc"', '"abd"', '', '"x", W/"abc"']) expect(ifMatchHolds(header, '"abc"'), header).toBe(false);
  });
});

describe('JSON Merge Patch (RFC 7396)', () => {
  it('follows the examples of RFC 7396 Appendix A', () => {
    const cases: Array<[unknown, unknown, unknown]> = [
      [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
      [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
      [{ a: 'b' }, { a: null }, {}],
      [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
      [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
      [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
      [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
      [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
      [
        ['a', 'b'],
        ['c', 'd'],
        ['c', 'd'],
      ],
      [{ a: 'b' }, ['c'], ['c']],
      [{ a: 'foo' }, null, null],
      [{ a: 'foo' }, 'bar', 'bar'],
      [{ e: null }, { a: 1 }, { e: null, a: 1 }],
      [[1, 2], { a: 'b', c: null }, { a: 'b' }],
      [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
    ];
    for (const [target, patch, result] of cases)
      expect(mergePatch(target, patch), JSON.stringify([target, patch])).toEqual(result);
  });

  const current: CourseMetadataValues = {
    title: { en: 'Anatomy', fr: 'Anatomie' },
    description: { en: 'About' },
    defaultLocale: 'en',
    tags: ['a', 'b'],
    cover: { assetId: 'med_01JD0000000000000000000000' },
    authors: [],
    taxonomy: [],
  };

  it('merges locale maps: a locale sent replaces its text, the others stay, null removes one', () => {
    expect(metadataInputFromMergePatch(current, { title: { en: 'Anatomy II' } })).toEqual({
      title: { en: 'Anatomy II', fr: 'Anatomie' },
    });
    expect(
      metadataInputFromMergePatch(current, { title: { fr: null, de: 'Anatomie DE' }, description: { es: 'Sobre' } }),
    ).toEqual({
      title: { en: 'Anatomy', de: 'Anatomie DE' },
      description: { en: 'About', es: 'Sobre' },
    });
  });

  it('sends only the members the patch names; arrays replace; cover null removes the cover', () => {
    expect(metadataInputFromMergePatch(current, { tags: ['c'] })).toEqual({ tags: ['c'] });
    expect(metadataInputFromMergePatch(current, { cover: null })).toEqual({ cover: null });
    expect(
      metadataInputFromMergePatch({ ...current, cover: null }, { cover: { assetId: 'med_01JD0000000000000000000001' } }),
    ).toEqual({ cover: { assetId: 'med_01JD0000000000000000000001' } });
  });
});

describe('Retry-After on the REST door', () => {
  it('is on every 429 and 503 mapped from GraphQL, 1 s when the subgraph named no delay', () => {
    for (const [code, status] of [
      ['service.unavailable', 503],
      ['quota.unavailable', 503],
      ['quota.exceeded', 429],
    ] as const) {
      expect(errorFromGraphQL([{ message: 'x', extensions: { code, status } }]).headers, code).toEqual({ 'retry-after': '1' });
    }
    expect(errorFromGraphQL([{ message: 'x', extensions: { code: 'request.not_found', status: 404 } }]).headers).toEqual({});
  });
});
