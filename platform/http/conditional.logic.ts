/**
 * Conditional requests of RFC 9110 §13 on the REST door: If-Match for a read-merge-write and
 * If-None-Match for GETs that carry an ETag. Pure: header text and entity tags in, decisions out.
 */

interface EntityTag {
  weak: boolean;
  /** The tag without `W/` and without its quotes. */
  opaque: string;
}

/**
 * The members of an If-Match / If-None-Match list, or `*`. A bare token (no quotes) is read as the
 * opaque part of a strong tag, as the catalog's own If-Match check reads it: GraphQL clients often
 * pass the course etag without its quotes.
 */
function parseTagList(header: string): EntityTag[] | '*' {
  const value = header.trim();
  if (value === '*') return '*';
  return (value.match(/(W\/)?"[^"]*"|[^,\s]+/g) ?? []).map((item) => {
    const weak = item.startsWith('W/');
    const tag = weak ? item.slice(2) : item;
    return { weak, opaque: tag.replace(/^"|"$/g, '') };
  });
}

const opaqueOf = (etag: string) => etag.replace(/^W\//, '').replace(/^"|"$/g, '');

/**
 * If-Match (§13.1.1), strong comparison: true when the header is `*` or lists the current tag;
 * a weak tag never matches. An absent header is the caller's business (428), not decided here.
 */
export function ifMatchHolds(header: string, currentEtag: string): boolean {
  const tags = parseTagList(header);
  if (tags === '*') return true;
  const current = opaqueOf(currentEtag);
  return tags.some((tag) => !tag.weak && tag.opaque === current);
}

/**
 * If-None-Match (§13.1.2), weak comparison: false (so a GET answers 304) when the header is `*`
 * (a current representation exists) or lists the current tag, weak or strong.
 */
export function ifNoneMatchHolds(header: string, currentEtag: string): boolean {
  const tags = parseTagList(header);
  if (tags === '*') return false;
  const current = opaqueOf(currentEtag);
  return !tags.some((tag) => tag.opaque === current);
}
