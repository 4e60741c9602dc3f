/**
 * Response shaping of the REST door: the spec's field names, strong ETags, Content-Language.
 * Pure; the route table applies these to the data of its GraphQL operations.
 */

import { AppError } from '../platform/errors/errors.js';
import { LOCALE_PATTERN } from './schemas.js';

/** The course fields of the spec, plus the Accept-Language resolution of its locale maps. */
export const COURSE_FIELDS = `
  courseId slug title description defaultLocale visibility
  authors { userId role displayName }
  taxonomy { taxonomyId nodePath }
  tags cover { assetId } etag sourceDraftId
  localizedTitle { locale text } localizedDescription { locale text }`;

export interface LocalizedText {
  locale: string;
  text: string;
}

export interface CourseData {
  courseId: string;
  slug: string;
  title: Record<string, string>;
  description: Record<string, string>;
  defaultLocale: string;
  visibility: string;
  authors: Array<{ userId: string; role: string; displayName: string }>;
  taxonomy: Array<{ taxonomyId: string; nodePath: string }>;
  tags: string[];
  cover: { assetId: string } | null;
  etag: string;
  sourceDraftId: string | null;
  localizedTitle: LocalizedText | null;
  localizedDescription: LocalizedText | null;
}

/** Fixed member order, so equal courses serialise to equal bytes. */
export function courseJson(course: CourseData): CourseData {
  return {
    courseId: course.courseId,
    slug: course.slug,
    title: course.title,
    description: course.description,
    defaultLocale: course.defaultLocale,
    visibility: course.visibility,
    authors: course.authors,
    taxonomy: course.taxonomy,
    tags: course.tags,
    cover: course.cover ?? null,
    etag: course.etag,
    sourceDraftId: course.sourceDraftId ?? null,
    localizedTitle: course.localizedTitle ?? null,
    localizedDescription: course.localizedDescription ?? null,
  };
}

/** An entity-tag is a quoted string; a stored etag that already is one is sent unchanged. */
export function strongEtag(etag: string): string {
  return /^"[\x21\x23-\x7e\x80-\xff]*"$/.test(etag) ? etag : `"${etag.replace(/["\\\s]/g, '')}"`;
}

const LANGUAGE_TAG = new RegExp(LOCALE_PATTERN);

/**
 * The locales the text of the response is in, in order of first use (RFC 9110 §8.5). Only valid
 * language tags are named: a stored code that is not one (written before consumed events were
 * checked, e.g. with a CR/LF in it) would make the header, and so the whole answer, fail.
 */
export function contentLanguage(courses: CourseData[]): string | undefined {
  const locales = new Set<string>();
  for (const course of courses) {
    if (course.localizedTitle) locales.add(course.localizedTitle.locale);
    if (course.localizedDescription) locales.add(course.localizedDescription.locale);
  }
  const valid = [...locales].filter((locale) => locale.length <= 35 && LANGUAGE_TAG.test(locale));
  return valid.length ? valid.join(', ') : undefined;
}

export function localeHeaders(courses: CourseData[]): Record<string, string> {
  const language = contentLanguage(courses);
  return { vary: 'Accept-Language', ...(language ? { 'content-language': language } : {}) };
}

export interface CourseConnectionData {
  edges: Array<{ cursor: string; node: CourseData }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export function coursesPage(connection: CourseConnectionData): { items: CourseData[]; nextCursor: string | null } {
  return {
    items: connection.edges.map((edge) => courseJson(edge.node)),
    nextCursor: connection.pageInfo.hasNextPage ? connection.pageInfo.endCursor : null,
  };
}

/** A course answer: its JSON, its strong ETag, and the language of its texts. */
export function courseResult(course: CourseData) {
  return { status: 200, body: courseJson(course), headers: { etag: strongEtag(course.etag), ...localeHeaders([course]) } };
}

export interface AssistData {
  provenanceId: string;
  status: string;
}

/** completed → 200, pending_review → 202 (poll the provenance); blocked and failed are problems that still name the provenance. */
export function assistResult(result: AssistData & Record<string, unknown>) {
  const location = `/v1/ai/provenance/${encodeURIComponent(result.provenanceId)}`;
  if (result.status === 'completed') return { status: 200, body: result };
  if (result.status === 'pending_review') return { status: 202, body: result, headers: { location } };
  const details = { provenanceId: result.provenanceId, result: result.status };
  if (result.status === 'blocked') throw new AppError('moderation.blocked', 'The output was blocked by moderation', { details });
  throw new AppError('provider.unavailable', 'No provider produced an output; the attempt is recorded', {
    details,
    headers: { 'retry-after': '1' },
  });
}

/** The settings with their tag as the ETag header, for If-None-Match here and If-Match on PUT. */
export function quotaResult(settings: { etag: string } & Record<string, unknown>) {
  return { status: 200, body: settings, headers: { etag: settings.etag } };
}

export type RoutingRuleData = { ruleId: string; activeVersion: number | null } & Record<string, unknown>;

/** `version` first: the version in force is what an administrator checks after a change. */
export function routingRuleJson({ ruleId, ...rule }: RoutingRuleData) {
  return { ruleId, version: rule.activeVersion, ...rule };
}

export const routingRuleUrl = (ruleId: string) => `/v1/admin/routing-rules/${encodeURIComponent(ruleId)}`;
