/**
 * JSON Merge Patch (RFC 7396) for `PATCH` with `application/merge-patch+json`. Pure: the current
 * course and the patch in, the updateCourseMetadata input out.
 */

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * RFC 7396 §2 MergePatch: an object merges member by member (recursively), `null` removes a
 * member, anything else (arrays included) replaces the target.
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete result[name];
    else result[name] = mergePatch(result[name], value);
  }
  return result;
}

/** The course members a patch may name, as updateCourseMetadata takes them. */
export interface CourseMetadataValues {
  title: Record<string, string>;
  description: Record<string, string>;
  defaultLocale: string;
  tags: string[];
  cover: { assetId: string } | null;
  authors: Array<{ userId: string; role: string; displayName: string }>;
  taxonomy: Array<{ taxonomyId: string; nodePath: string }>;
}

/**
 * The updateCourseMetadata input that applies `patch` to `current`: each member the patch names,
 * merged (so `{"title": {"en": "New"}}` keeps the other locales and `{"title": {"fr": null}}`
 * removes one), and null where the merge removed the member (only `cover` may be removed; the
 * request schema refuses null for the others). Members the patch does not name are not sent.
 */
export function metadataInputFromMergePatch(current: CourseMetadataValues, patch: JsonObject): JsonObject {
  const { title, description, defaultLocale, tags, cover, authors, taxonomy } = current;
  const target: JsonObject = { title, description, defaultLocale, tags, authors, taxonomy, ...(cover ? { cover } : {}) };
  const merged = mergePatch(target, patch) as JsonObject;
  return Object.fromEntries(Object.keys(patch).map((name) => [name, name in merged ? merged[name] : null]));
}
