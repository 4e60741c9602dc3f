import { canonicalJson } from '../../../platform/text/canonical-json.js';
import { badInput } from '../../../platform/errors/errors.js';
import { requireIfMatch as requireIfMatchOf } from '../../../platform/http/conditional.logic.js';
import { isId } from '../../../platform/ids.js';

export type LocaleMap = Record<string, string>;
export interface Author {
  userId: string;
  role: string;
  displayName: string;
}
export interface TaxonomyRef {
  taxonomyId: string;
  nodePath: string;
}
export interface Cover {
  assetId: string;
}

/**
 * The mutable metadata of a course: what drafts, built packages and updateCourseMetadata write
 * and what `catalog.course.metadata_updated` reports (the etag covers more: course-etag.logic.ts).
 * Visibility is not in it: it changes only through its own operation and event
 * (`visibility_changed`).
 */
export interface CourseMetadata {
  title: LocaleMap;
  description: LocaleMap;
  defaultLocale: string;
  authors: Author[];
  taxonomy: TaxonomyRef[];
  tags: string[];
  cover: Cover | null;
}

export const METADATA_FIELDS = ['title', 'description', 'defaultLocale', 'authors', 'taxonomy', 'tags', 'cover'] as const;
export type MetadataField = (typeof METADATA_FIELDS)[number];

export const DEFAULT_AUTHOR_ROLE = 'author';

export interface MetadataDiff {
  changedFields: MetadataField[];
  previous: Partial<CourseMetadata>;
  next: Partial<CourseMetadata>;
}

export function diffMetadata(before: CourseMetadata, after: CourseMetadata): MetadataDiff {
  const diff: MetadataDiff = { changedFields: [], previous: {}, next: {} };
  for (const field of METADATA_FIELDS) {
    if (canonicalJson(before[field]) === canonicalJson(after[field])) continue;
    diff.changedFields.push(field);
    (diff.previous as Record<string, unknown>)[field] = before[field];
    (diff.next as Record<string, unknown>)[field] = after[field];
  }
  return diff;
}

/**
 * updateCourseMetadata's If-Match (RFC 9110 §13.1.1, read as the REST door reads it:
 * platform/http/conditional.logic.ts): 428 without one, 412 naming the current tag when stale.
 */
export function requireIfMatch(header: string | undefined | null, currentEtag: string): void {
  requireIfMatchOf(header, currentEtag, 'course');
}

// ------------------------------------------------------------------ precedence of sources

/**
 * Which write set a field: a drafted or admin edit outranks metadata carried by a built package
 * (the package repeats the draft it was built from, possibly an older one), and within a tier the
 * newer fact wins, by `occurredAt`, then by event id. The rule is per field and order-free (a
 * last-writer-wins register), so a draft and a built event, in either order or replayed later
 * from the dead letters, end in the same course.
 */
export type MetadataSource = 'built' | 'draft' | 'admin';
export interface FieldStamp {
  source: MetadataSource;
  at: string;
  id: string;
}
export type StampedField = MetadataField | 'visibility' | 'sourceDraftId';
export type Provenance = Partial<Record<StampedField, FieldStamp>>;

const TIER: Record<MetadataSource, number> = { built: 0, draft: 1, admin: 1 };

export function compareStamps(a: FieldStamp, b: FieldStamp): number {
  return TIER[a.source] - TIER[b.source] || Date.parse(a.at) - Date.parse(b.at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

export interface StampedState {
  metadata: CourseMetadata;
  visibility: string;
  sourceDraftId: string | null;
  provenance: Provenance;
}

export type IncomingValues = Partial<CourseMetadata> & { visibility?: string; sourceDraftId?: string };

/**
 * Applies each present field whose stamp is not older than the field's current stamp. `force`
 * (admin edits, which are guarded by If-Match instead) always applies, and stamps the field no
 * earlier than what it replaces so a later, older event cannot undo the edit.
 */
export function mergeByPrecedence(
  current: StampedState,
  incoming: IncomingValues,
  stamp: FieldStamp,
  options: { force?: boolean } = {},
): StampedState {
  const next: StampedState = {
    metadata: { ...current.metadata },
    visibility: current.visibility,
    sourceDraftId: current.sourceDraftId,
    provenance: { ...current.provenance },
  };
  const fields: StampedField[] = [...METADATA_FIELDS, 'visibility', 'sourceDraftId'];
  for (const field of fields) {
    const value = incoming[field];
    if (value === undefined) continue;
    const existing = current.provenance[field];
    let fieldStamp = stamp;
    if (existing && compareStamps(stamp, existing) < 0) {
      if (!options.force) continue;
      fieldStamp = { ...stamp, at: existing.at };
    }
    if (field === 'visibility') next.visibility = value as string;
    else if (field === 'sourceDraftId') next.sourceDraftId = value as string;
    else (next.metadata as unknown as Record<string, unknown>)[field] = value;
    next.provenance[field] = fieldStamp;
  }
  return next;
}

/** The stamps of a course created from `values`: only the fields the source actually gave. */
export function initialProvenance(values: IncomingValues, stamp: FieldStamp): Provenance {
  const provenance: Provenance = {};
  for (const field of [...METADATA_FIELDS, 'visibility', 'sourceDraftId'] as StampedField[]) {
    if (values[field] !== undefined) provenance[field] = stamp;
  }
  return provenance;
}

// ------------------------------------------------------------------ normalising consumed values

/** Consumed authors need only a userId; the course record always has role and displayName. */
export function normalizeAuthors(authors: Array<{ userId: string; role?: string; displayName?: string }>): Author[] {
  return authors.map((author) => ({
    userId: author.userId,
    role: author.role ?? DEFAULT_AUTHOR_ROLE,
    displayName: author.displayName ?? '',
  }));
}

// ------------------------------------------------------------------ validating admin input

const LOCALE_TAG = /^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/;
const NODE_PATH = /^[A-Za-z0-9][A-Za-z0-9_.-]*(\/[A-Za-z0-9][A-Za-z0-9_.-]*)*$/;
const LIMITS = {
  locales: 50,
  title: 500,
  description: 20_000,
  authors: 100,
  displayName: 200,
  role: 64,
  taxonomy: 100,
  tags: 50,
  tag: 64,
};

export function isLocaleTag(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 35 && LOCALE_TAG.test(value);
}

export function isNodePath(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 512 && NODE_PATH.test(value);
}

export function validateLocaleMap(value: unknown, field: string, options: { maxText: number; requireEntry: boolean }): LocaleMap {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw badInput(`${field} must be an object of locale code to text`, { field });
  const entries = Object.entries(value as Record<string, unknown>);
  if (options.requireEntry && entries.length === 0) throw badInput(`${field} needs at least one locale`, { field });
  if (entries.length > LIMITS.locales) throw badInput(`${field} has more than ${LIMITS.locales} locales`, { field });
  const map: LocaleMap = {};
  for (const [locale, text] of entries) {
    if (!isLocaleTag(locale))
      throw badInput(`${field} has "${locale}", which is not a BCP-47 locale code`, { field: `${field}.${locale}` });
    if (typeof text !== 'string') throw badInput(`${field}.${locale} must be a string`, { field: `${field}.${locale}` });
    if (text.length > options.maxText)
      throw badInput(`${field}.${locale} is longer than ${options.maxText} characters`, { field: `${field}.${locale}` });
    map[locale] = text;
  }
  return map;
}

export interface MetadataInput {
  title?: unknown;
  description?: unknown;
  defaultLocale?: string | null;
  tags?: string[] | null;
  cover?: { assetId: string } | null;
  authors?: Array<{ userId: string; role: string; displayName: string }> | null;
  taxonomy?: Array<{ taxonomyId: string; nodePath: string }> | null;
}

/**
 * Checks an updateCourseMetadata input and returns the fields it sets. Absent (undefined) means
 * unchanged; `cover: null` removes the cover; null for the other fields is refused, since
 * "no title" or "no tags list" is not a state a course can be in (use [] or {} to empty).
 */
export function validateMetadataInput(input: MetadataInput, current: CourseMetadata): Partial<CourseMetadata> {
  const out: Partial<CourseMetadata> = {};
  for (const field of ['title', 'description', 'defaultLocale', 'tags', 'authors', 'taxonomy'] as const) {
    if (input[field] === null) throw badInput(`${field} may not be null; leave it out to keep it unchanged`, { field });
  }
  if (input.title !== undefined)
    out.title = validateLocaleMap(input.title, 'title', { maxText: LIMITS.title, requireEntry: true });
  if (input.description !== undefined) {
    out.description = validateLocaleMap(input.description, 'description', { maxText: LIMITS.description, requireEntry: false });
  }
  if (input.defaultLocale !== undefined) {
    if (!isLocaleTag(input.defaultLocale))
      throw badInput('defaultLocale is not a BCP-47 locale code', { field: 'defaultLocale' });
    out.defaultLocale = input.defaultLocale as string;
  }
  if (input.tags !== undefined) out.tags = validateTags(input.tags as string[]);
  if (input.cover !== undefined) {
    if (input.cover !== null && !isId('mediaAsset', input.cover.assetId))
      throw badInput('cover.assetId is not a media asset id (med_...)', { field: 'cover.assetId' });
    out.cover = input.cover === null ? null : { assetId: input.cover.assetId };
  }
  if (input.authors !== undefined) out.authors = validateAuthors(input.authors as Author[]);
  if (input.taxonomy !== undefined) out.taxonomy = validateTaxonomyRefs(input.taxonomy as TaxonomyRef[]);
  if (Object.keys(out).length === 0) throw badInput('Give at least one field to update', { field: 'input' });
  if (out.title !== undefined || out.defaultLocale !== undefined) {
    const title = out.title ?? current.title;
    const defaultLocale = out.defaultLocale ?? current.defaultLocale;
    if (!(defaultLocale in title)) {
      throw badInput(`title has no text for the default locale ${defaultLocale}`, {
        field: out.title ? 'title' : 'defaultLocale',
      });
    }
  }
  return out;
}

function validateTags(tags: string[]): string[] {
  if (tags.length > LIMITS.tags) throw badInput(`tags has more than ${LIMITS.tags} entries`, { field: 'tags' });
  const seen = new Set<string>();
  return tags.map((raw, index) => {
    const tag = raw.trim();
    if (!tag) throw badInput(`tags[${index}] is blank`, { field: `tags[${index}]` });
    if (tag.length > LIMITS.tag)
      throw badInput(`tags[${index}] is longer than ${LIMITS.tag} characters`, { field: `tags[${index}]` });
    if (seen.has(tag)) throw badInput(`tags has "${tag}" twice`, { field: `tags[${index}]` });
    seen.add(tag);
    return tag;
  });
}

function validateAuthors(authors: Author[]): Author[] {
  if (authors.length > LIMITS.authors) throw badInput(`authors has more than ${LIMITS.authors} entries`, { field: 'authors' });
  const seen = new Set<string>();
  return authors.map((author, index) => {
    const at = `authors[${index}]`;
    if (!isId('user', author.userId)) throw badInput(`${at}.userId is not a user id (usr_...)`, { field: `${at}.userId` });
    if (seen.has(author.userId)) throw badInput(`authors lists ${author.userId} twice`, { field: `${at}.userId` });
    seen.add(author.userId);
    const role = author.role.trim();
    if (!role || role.length > LIMITS.role)
      throw badInput(`${at}.role must be 1 to ${LIMITS.role} characters`, { field: `${at}.role` });
    if (author.displayName.length > LIMITS.displayName) {
      throw badInput(`${at}.displayName is longer than ${LIMITS.displayName} characters`, { field: `${at}.displayName` });
    }
    return { userId: author.userId, role, displayName: author.displayName };
  });
}

function validateTaxonomyRefs(refs: TaxonomyRef[]): TaxonomyRef[] {
  if (refs.length > LIMITS.taxonomy) throw badInput(`taxonomy has more than ${LIMITS.taxonomy} entries`, { field: 'taxonomy' });
  const seen = new Set<string>();
  return refs.map((ref, index) => {
    const at = `taxonomy[${index}]`;
    if (!isId('taxonomy', ref.taxonomyId))
      throw badInput(`${at}.taxonomyId is not a taxonomy id (tax_...)`, { field: `${at}.taxonomyId` });
    if (!isNodePath(ref.nodePath))
      throw badInput(`${at}.nodePath is not a node path (segments separated by /)`, { field: `${at}.nodePath` });
    const key = `${ref.taxonomyId} ${ref.nodePath}`;
    if (seen.has(key)) throw badInput(`taxonomy lists ${ref.taxonomyId} ${ref.nodePath} twice`, { field: at });
    seen.add(key);
    return { taxonomyId: ref.taxonomyId, nodePath: ref.nodePath };
  });
}
