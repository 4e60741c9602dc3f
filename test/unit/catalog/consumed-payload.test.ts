import { describe, expect, it } from 'vitest';
import {
  builtLocaleFields,
  draftLocaleFields,
  invalidLocale,
  resolvePublishedBy,
} from '../../../subgraphs/catalog/use-cases/consumed-payload.logic.js';

const USER = 'usr_01JDFXTR0000000000000000A1';
const AUTHOR = 'usr_01JDFXTR0000000000000000A2';

describe('publishedBy of a built event', () => {
  const authors = [
    { userId: USER, role: 'reviewer' },
    { userId: AUTHOR, role: 'author' },
  ];

  it("is the payload's own, else a user actor, else the first author with role author", () => {
    expect(resolvePublishedBy({ publishedBy: USER, authors }, { id: 'content-svc' })).toBe(USER);
    expect(resolvePublishedBy({ authors }, { id: USER })).toBe(USER);
    expect(resolvePublishedBy({ authors }, { id: 'content-svc' })).toBe(AUTHOR);
    expect(resolvePublishedBy({ authors }, undefined)).toBe(AUTHOR);
  });

  it('is undefined when nothing names a user', () => {
    expect(resolvePublishedBy({}, { id: 'content-svc' })).toBeUndefined();
    expect(
      resolvePublishedBy({ authors: [{ userId: USER, role: 'reviewer' }, { userId: AUTHOR }] }, { id: 'usr_bad' }),
    ).toBeUndefined();
  });
});

describe('locale codes of consumed payloads', () => {
  const built = {
    defaultLocale: 'en',
    locales: ['en', 'de-CH'],
    title: { en: 't', 'de-CH': 't' },
    description: { en: 'd' },
    changelog: { 'zh-Hant-TW': 'c' },
    moduleSummaries: [{ title: { en: 'm' } }, { title: { de: 'm' } }],
  };

  it('are accepted when every one is a BCP-47 tag by the admin rule', () => {
    expect(invalidLocale(builtLocaleFields(built))).toBeUndefined();
    expect(invalidLocale(draftLocaleFields({ defaultLocale: 'fr', metadata: { title: { fr: 't' } } }))).toBeUndefined();
  });

  it('name the first invalid one and where it is, in every locale field', () => {
    const evil = 'en\r\nX-Injected: 1';
    expect(invalidLocale(builtLocaleFields({ ...built, defaultLocale: evil }))).toEqual({ path: '/defaultLocale', value: evil });
    expect(invalidLocale(builtLocaleFields({ ...built, locales: ['en', 'e n'] }))).toEqual({ path: '/locales/1', value: 'e n' });
    expect(invalidLocale(builtLocaleFields({ ...built, title: { en: 't', [evil]: 't' } }))).toEqual({
      path: '/title',
      value: evil,
    });
    expect(invalidLocale(builtLocaleFields({ ...built, changelog: { '': 'c' } }))).toEqual({ path: '/changelog', value: '' });
    expect(
      invalidLocale(
        builtLocaleFields({ ...built, moduleSummaries: [{ title: { en: 'm' } }, { title: { ['x'.repeat(40)]: 'm' } }] }),
      ),
    ).toEqual({ path: '/moduleSummaries/1/title', value: 'x'.repeat(40) });
    expect(
      invalidLocale(draftLocaleFields({ defaultLocale: 'en', metadata: { title: { en: 't' }, description: { en_US: 'd' } } })),
    ).toEqual({ path: '/metadata/description', value: 'en_US' });
  });
});
