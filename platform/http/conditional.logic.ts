/**
 * Conditional requests of RFC 9110 §13: the one reading of If-Match and If-None-Match, shared by
 * the REST door (rest-compat) and the versioned writes of the subgraphs (a course's metadata, a
 * routing rule, a taxonomy), so the doors cannot disagree on what matches. Pure: header text and
 * entity tags in, decisions (or the refusal) out.
 */
import { AppError } from '../errors/errors.js';

interface EntityTag {
  weak: boolean;
  /** The tag without `W/` and without its quotes. */
  opaque: string;
}

const QUOTED_TAG = /^(W\/)?"([^"]*)"$/;

/**
 * One entity tag. A bare token (no quotes) is read as the opaque part of a tag, strong unless it
 * starts with `W/`: GraphQL clients often pass the course etag without its quotes. A token with
 * a stray quote (`"abc`) is taken as it stands, so it matches no well-formed tag.
 */
function parseTag(item: string): EntityTag {
  const quoted = QUOTED_TAG.exec(item);
  if (quoted) return { weak: quoted[1] !== undefined, opaque: quoted[2] };
  const weak = item.startsWith('W/');
  return { weak, opaque: weak ? item.slice(2) : item };
}

/** The members of an If-Match / If-None-Match list, or `*`. */
function parseTagList(header: string): EntityTag[] | '*' {
  const value = header.trim();
  if (value === '*') return '*';
  return (value.match(/(W\/)?"[^"]*"|[^,\s]+/g) ?? []).map(parseTag);
}

/**
 * If-Match (§13.1.1), strong comparison: `match` when the header is `*` or lists the current tag
 * (neither of the two weak); a weak tag never matches. `missing` for an absent or blank header:
 * what that means (428, or 412 at a door that checked presence first) is the caller's business.
 */
export function ifMatchOutcome(header: string | undefined | null, currentEtag: string): 'missing' | 'match' | 'mismatch' {
  if (!header?.trim()) return 'missing';
  const tags = parseTagList(header);
  if (tags === '*') return 'match';
  const current = parseTag(currentEtag);
  return !current.weak && tags.some((tag) => !tag.weak && tag.opaque === current.opaque) ? 'match' : 'mismatch';
}

/**
 * The If-Match of a write of an existing versioned resource (`what`: "course", "routing rule", …):
 * 428 request.precondition_required without one (a client must show which version it changes),
 * 412 request.precondition_failed naming the current tag when it does not match.
 */
export function requireIfMatch(header: string | undefined | null, currentEtag: string, what: string): void {
  const outcome = ifMatchOutcome(header, currentEtag);
  if (outcome === 'missing') {
    throw new AppError('request.precondition_required', `This write needs an If-Match header with the ${what} etag`, {
      status: 428,
    });
  }
  if (outcome === 'mismatch') {
    throw new AppError(
      'request.precondition_failed',
      `If-Match does not match the current ${what} etag; re-read the ${what} and retry`,
      { status: 412, details: { etag: currentEtag } },
    );
  }
}

/** If-Match as a yes or no: true only for a header that matches (`ifMatchOutcome`). */
export function ifMatchHolds(header: string, currentEtag: string): boolean {
  return ifMatchOutcome(header, currentEtag) === 'match';
}

/**
 * If-None-Match (§13.1.2), weak comparison: false (so a GET answers 304) when the header is `*`
 * (a current representation exists) or lists the current tag, weak or strong.
 */
export function ifNoneMatchHolds(header: string, currentEtag: string): boolean {
  const tags = parseTagList(header);
  if (tags === '*') return false;
  const current = parseTag(currentEtag);
  return !tags.some((tag) => tag.opaque === current.opaque);
}
