import { describe, expect, it } from 'vitest';
import { ifMatchOutcome } from '../../../platform/http/conditional.logic.js';
import { courseEtag, type CourseRepresentation } from '../../../subgraphs/catalog/course/course-etag.logic.js';
import {
  diffMetadata,
  mergeByPrecedence,
  normalizeAuthors,
  requireIfMatch,
  validateMetadataInput,
  type CourseMetadata,
  type FieldStamp,
  type StampedState,
} from '../../../subgraphs/catalog/course/course-metadata.logic.js';
import { errorOf } from './support.js';

const USER = 'usr_01HZX3K7Q8W9E2R4T6Y8V0A1BP';
const base: CourseMetadata = {
  title: { en: 'Hand hygiene' },
  description: { en: 'Basics' },
  defaultLocale: 'en',
  authors: [{ userId: USER, role: 'author', displayName: 'Ada' }],
  taxonomy: [],
  tags: ['safety'],
  cover: null,
};

describe('metadata diff', () => {
  it('lists changed fields with their previous and next values only', () => {
    const diff = diffMetadata(base, { ...base, tags: ['safety', 'ward'], title: { en: 'Hand hygiene 2' } });
    expect(diff.changedFields).toEqual(['title', 'tags']);
    expect(diff.previous).toEqual({ title: { en: 'Hand hygiene' }, tags: ['safety'] });
    expect(diff.next).toEqual({ title: { en: 'Hand hygiene 2' }, tags: ['safety', 'ward'] });
  });

  it('ignores key order inside locale maps', () => {
    const a = { ...base, title: { en: 'A', de: 'B' } };
    const b = { ...base, title: { de: 'B', en: 'A' } };
    expect(diffMetadata(a, b).changedFields).toEqual([]);
  });
});

const course: CourseRepresentation = {
  ...base,
  visibility: 'org',
  sourceDraftId: 'drf_01HZX3K7Q8W9E2R4T6Y8V0A1BP',
  state: 'registered',
  latestVersionLabel: '1.0.0',
};

describe('etag', () => {
  it('is a quoted strong tag of the content, equal for equal content whatever the key order', () => {
    const etag = courseEtag(course);
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect(courseEtag({ ...course })).toBe(etag);
    expect(courseEtag({ ...course, title: { en: 'Hand hygiene' } })).toBe(etag);
  });

  it('changes with every field a reader sees', () => {
    const etag = courseEtag(course);
    const changes: Array<[string, Partial<CourseRepresentation>]> = [
      ['title', { title: { en: 'Hand hygiene 2' } }],
      ['description', { description: {} }],
      ['defaultLocale', { defaultLocale: 'de' }],
      ['authors', { authors: [{ ...base.authors[0], displayName: '[redacted]' }] }],
      ['taxonomy', { taxonomy: [{ taxonomyId: 'tax_01HZX3K7Q8W9E2R4T6Y8V0A1BP', nodePath: 'a' }] }],
      ['tags', { tags: [] }],
      ['cover', { cover: { assetId: 'med_01HZX3K7Q8W9E2R4T6Y8V0A1BP' } }],
      ['visibility', { visibility: 'marketplace' }],
      ['state', { state: 'archived' }],
      ['latestVersionLabel', { latestVersionLabel: '1.1.0' }],
      ['latestVersionLabel (none)', { latestVersionLabel: null }],
      ['sourceDraftId', { sourceDraftId: 'drf_01HZX3K7Q8W9E2R4T6Y8V0A1BQ' }],
    ];
    const tags = new Set([etag]);
    for (const [field, change] of changes) {
      const changed = courseEtag({ ...course, ...change });
      expect(changed, field).not.toBe(etag);
      tags.add(changed);
    }
    expect(tags.size).toBe(changes.length + 1);
  });

  it('compares If-Match strongly, accepting lists, * and the unquoted value', () => {
    const etag = courseEtag(course);
    expect(ifMatchOutcome(undefined, etag)).toBe('missing');
    expect(ifMatchOutcome('  ', etag)).toBe('missing');
    expect(ifMatchOutcome(etag, etag)).toBe('match');
    expect(ifMatchOutcome(etag.slice(1, -1), etag)).toBe('match');
    expect(ifMatchOutcome(`"other", ${etag}`, etag)).toBe('match');
    expect(ifMatchOutcome('*', etag)).toBe('match');
    expect(ifMatchOutcome(`W/${etag}`, etag)).toBe('mismatch');
    expect(ifMatchOutcome('"stale"', etag)).toBe('mismatch');
  });

  it('answers 428 without If-Match and 412 on a stale one', () => {
    const etag = courseEtag(course);
    expect(errorOf(() => requireIfMatch(undefined, etag))).toMatchObject({ code: 'request.precondition_required', status: 428 });
    expect(errorOf(() => requireIfMatch('"stale"', etag))).toMatchObject({ code: 'request.precondition_failed', status: 412 });
    expect(errorOf(() => requireIfMatch(etag, etag))).toBeUndefined();
  });
});

describe('precedence of metadata sources', () => {
  const built = (at: string, id = 'b'): FieldStamp => ({ source: 'built', at, id });
  const draft = (at: string, id = 'd'): FieldStamp => ({ source: 'draft', at, id });
  const state = (): StampedState => ({ metadata: base, visibility: 'org', sourceDraftId: null, provenance: {} });

  it('lets a draft override built metadata, and never the other way round', () => {
    const t1 = '2026-11-01T00:00:00.000Z';
    const t2 = '2026-11-02T00:00:00.000Z';
    const afterBuilt = mergeByPrecedence(state(), { title: { en: 'From package' } }, built(t2));
    const afterDraft = mergeByPrecedence(afterBuilt, { title: { en: 'From draft' } }, draft(t1));
    expect(afterDraft.metadata.title).toEqual({ en: 'From draft' });
    // A newer package does not undo the draft's title.
    const laterBuilt = mergeByPrecedence(
      afterDraft,
      { title: { en: 'Package again' }, tags: ['pkg'] },
      built('2026-11-03T00:00:00.000Z'),
    );
    expect(laterBuilt.metadata.title).toEqual({ en: 'From draft' });
    expect(laterBuilt.metadata.tags).toEqual(['pkg']);
  });

  it('ends in the same state whatever the order of the same events', () => {
    const events: Array<[Partial<CourseMetadata> & { visibility?: string }, FieldStamp]> = [
      [{ title: { en: 'B1' }, tags: ['b'] }, built('2026-11-02T00:00:00.000Z', 'b1')],
      [{ title: { en: 'D1' }, visibility: 'marketplace' }, draft('2026-11-01T00:00:00.000Z', 'd1')],
      [{ title: { en: 'D2' } }, draft('2026-11-03T00:00:00.000Z', 'd2')],
      [{ tags: ['b2'] }, built('2026-11-04T00:00:00.000Z', 'b2')],
    ];
    const forward = events.reduce((acc, [values, stamp]) => mergeByPrecedence(acc, values, stamp), state());
    const backward = [...events].reverse().reduce((acc, [values, stamp]) => mergeByPrecedence(acc, values, stamp), state());
    expect(backward).toEqual(forward);
    expect(forward.metadata.title).toEqual({ en: 'D2' });
    expect(forward.metadata.tags).toEqual(['b2']);
    expect(forward.visibility).toBe('marketplace');
  });

  it('applies a forced (admin) edit even over a newer stamp, keeping that stamp', () => {
    const future = draft('2030-01-01T00:00:00.000Z');
    const drafted = mergeByPrecedence(state(), { tags: ['x'] }, future);
    const edited = mergeByPrecedence(
      drafted,
      { tags: ['y'] },
      { source: 'admin', at: '2026-11-21T00:00:00.000Z', id: 'req' },
      { force: true },
    );
    expect(edited.metadata.tags).toEqual(['y']);
    expect(edited.provenance.tags?.at).toBe(future.at);
    expect(mergeByPrecedence(edited, { tags: ['z'] }, draft('2029-01-01T00:00:00.000Z')).metadata.tags).toEqual(['y']);
  });

  it('fills role and displayName of consumed authors', () => {
    expect(normalizeAuthors([{ userId: USER }])).toEqual([{ userId: USER, role: 'author', displayName: '' }]);
  });
});

describe('updateCourseMetadata input', () => {
  it('returns only the given fields, and null cover removes the cover', () => {
    expect(validateMetadataInput({ tags: [' a ', 'b'], cover: null }, base)).toEqual({ tags: ['a', 'b'], cover: null });
  });

  it.each([
    [{}, 'input'],
    [{ title: {} }, 'title'],
    [{ title: { 'not a locale': 'x' } }, 'title.not a locale'],
    [{ title: { de: 'Titel' } }, 'title'],
    [{ defaultLocale: 'fr' }, 'defaultLocale'],
    [{ defaultLocale: 'en_US' }, 'defaultLocale'],
    [{ tags: ['a', 'a'] }, 'tags[1]'],
    [{ tags: [''] }, 'tags[0]'],
    [{ tags: null }, 'tags'],
    [{ cover: { assetId: 'asset-1' } }, 'cover.assetId'],
    [{ authors: [{ userId: 'bob', role: 'author', displayName: 'Bob' }] }, 'authors[0].userId'],
    [{ authors: [base.authors[0], base.authors[0]] }, 'authors[1].userId'],
    [{ authors: [{ ...base.authors[0], role: ' ' }] }, 'authors[0].role'],
    [{ taxonomy: [{ taxonomyId: 'tax_1', nodePath: 'a/b' }] }, 'taxonomy[0].taxonomyId'],
    [{ taxonomy: [{ taxonomyId: 'tax_01HZX3K7Q8W9E2R4T6Y8V0A1BP', nodePath: '/a//b' }] }, 'taxonomy[0].nodePath'],
  ])('refuses %j as BAD_USER_INPUT naming %s', (input, field) => {
    const error = errorOf(() => validateMetadataInput(input as never, base));
    expect(error?.code).toBe('BAD_USER_INPUT');
    expect(error?.details?.field).toBe(field);
  });

  it('accepts a new title that covers a new default locale', () => {
    expect(validateMetadataInput({ title: { de: 'Titel' }, defaultLocale: 'de' }, base)).toEqual({
      title: { de: 'Titel' },
      defaultLocale: 'de',
    });
  });
});
