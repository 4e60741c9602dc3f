import { isId } from '../../../platform/ids.js';
import { isLocaleTag } from '../course/course-metadata.logic.js';

/**
 * What the catalog's handlers need from a consumed event beyond what its schema checks: the
 * tolerant reader's strict half (design §5). Pure, so each rule is unit-tested on plain data.
 */

interface AuthorRef {
  userId: string;
  role?: string;
}

/**
 * Who published a version announced by content.play_package.built. The spec does not list
 * `publishedBy` among that event's fields (it is a field of our own course_version.published),
 * so a producer following the spec leaves it out. In order: the payload's `publishedBy`; the
 * envelope's actor when it is a user (`usr_` id); the first author with role `author`.
 * Undefined when none of these names a user: the version cannot be published without one.
 */
export function resolvePublishedBy(
  payload: { publishedBy?: string; authors?: readonly AuthorRef[] },
  actor: { id?: unknown } | undefined,
): string | undefined {
  if (payload.publishedBy) return payload.publishedBy;
  if (isId('user', actor?.id)) return actor.id as string;
  return payload.authors?.find((author) => author.role === 'author')?.userId;
}

/** A locale-keyed map of text, as consumed payloads carry titles, descriptions and changelogs. */
type LocaleMap = Record<string, unknown> | undefined;

export interface LocaleFields {
  defaultLocale?: string;
  locales?: readonly string[];
  /** Maps whose keys are locale codes, by the payload path they are reported under. */
  maps: Record<string, LocaleMap>;
}

/**
 * The first locale code in a consumed payload that is not a BCP-47 tag by the rule the admin path
 * uses (`isLocaleTag`), as `{ path, value }`; undefined when every one is valid. A code such as
 * "en\r\nX: y" would otherwise be stored and later break every answer whose Content-Language
 * names it.
 */
export function invalidLocale(fields: LocaleFields): { path: string; value: string } | undefined {
  if (fields.defaultLocale !== undefined && !isLocaleTag(fields.defaultLocale))
    return { path: '/defaultLocale', value: fields.defaultLocale };
  const bad = fields.locales?.findIndex((locale) => !isLocaleTag(locale)) ?? -1;
  if (bad >= 0) return { path: `/locales/${bad}`, value: fields.locales![bad] };
  for (const [path, map] of Object.entries(fields.maps)) {
    const key = Object.keys(map ?? {}).find((locale) => !isLocaleTag(locale));
    if (key !== undefined) return { path, value: key };
  }
  return undefined;
}

/** The locale codes of a built event's payload, with the path each is found at. */
export function builtLocaleFields(p: {
  defaultLocale: string;
  locales: readonly string[];
  title: LocaleMap;
  description?: LocaleMap;
  changelog?: LocaleMap;
  moduleSummaries?: ReadonlyArray<{ title: LocaleMap }>;
}): LocaleFields {
  return {
    defaultLocale: p.defaultLocale,
    locales: p.locales,
    maps: {
      '/title': p.title,
      '/description': p.description,
      '/changelog': p.changelog,
      ...Object.fromEntries((p.moduleSummaries ?? []).map((module, i) => [`/moduleSummaries/${i}/title`, module.title])),
    },
  };
}

/** The locale codes of a draft event's payload. */
export function draftLocaleFields(p: {
  defaultLocale: string;
  metadata: { title: LocaleMap; description?: LocaleMap };
}): LocaleFields {
  return {
    defaultLocale: p.defaultLocale,
    maps: { '/metadata/title': p.metadata.title, '/metadata/description': p.metadata.description },
  };
}
