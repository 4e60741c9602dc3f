import { canonicalHash } from '../../../platform/text/canonical-json.js';

/**
 * Every field of a course a reader sees (REST's course and GraphQL's `Course`) that can change,
 * except its timestamps: what the entity tag stands for. Its id, tenant and slug never change, and
 * a tag is only ever compared with tags of the same course.
 */
export interface CourseRepresentation {
  title: unknown;
  description: unknown;
  defaultLocale: string;
  visibility: string;
  authors: unknown;
  taxonomy: unknown;
  tags: readonly string[];
  cover: unknown;
  sourceDraftId: string | null;
  state: string;
  latestVersionLabel: string | null;
}

/**
 * A strong entity tag derived from the content (RFC 9110 §8.8.3): the SHA-256 of the canonical
 * (RFC 8785) JSON of every field a reader sees — metadata, visibility, state, latest version,
 * source draft — so a change to any of them changes the tag, and `If-None-Match` with an older
 * tag is never answered 304 for a course that changed. Equal content gives the same tag on every
 * replica and whatever order the draft and built events arrived in. Timestamps are left out on
 * purpose: `updatedAt` moves with writes a reader cannot otherwise see (a version that did not
 * become latest, a newer stamp with equal values), and a time in the tag would make equal content
 * differ between replicas and event orders.
 */
export function courseEtag(course: CourseRepresentation): string {
  return `"${canonicalHash(Object.fromEntries(ETAG_FIELDS.map((field) => [field, course[field] ?? null])))}"`;
}

/** What the tag covers: every field a reader sees, timestamps aside (a test compares it with GraphQL's `Course`). */
export const ETAG_FIELDS: ReadonlyArray<keyof CourseRepresentation> = [
  'title',
  'description',
  'defaultLocale',
  'visibility',
  'authors',
  'taxonomy',
  'tags',
  'cover',
  'sourceDraftId',
  'state',
  'latestVersionLabel',
];

/** The row with the tag of what it now holds: every write of a course goes through here. */
export function withFreshEtag<R extends CourseRepresentation & { etag: string }>(row: R): R {
  return { ...row, etag: courseEtag(row) };
}
