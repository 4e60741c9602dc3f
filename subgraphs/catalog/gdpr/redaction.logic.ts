import { createHash } from 'node:crypto';
import { ERASED_USER_ID, isId } from '../../../platform/ids.js';
import type { Author } from '../course/course-metadata.logic.js';

export const REDACTED_DISPLAY_NAME = '[redacted]';

/**
 * The spec leaves open which retention classes permit zeroing an author id; it is a policy table
 * in configuration (GDPR_ZEROING_RETENTION_CLASSES, default `operational`).
 */
export function retentionPermitsZeroing(retentionClass: string, permitted: readonly string[]): boolean {
  return permitted.includes(retentionClass);
}

export interface RedactionRule {
  /** Users whose display name is replaced. */
  userIds: ReadonlySet<string>;
  /** Replace their userId with `usr_` + 26 zeros as well (erasure where retention permits). */
  zeroIds: boolean;
}

/**
 * The spec's rule for a data-subject request: a listed author keeps the entry, the displayName
 * becomes `[redacted]`, and on erasure (where permitted) the userId becomes the erased id.
 */
export function redactAuthors(authors: Author[], rule: RedactionRule): { authors: Author[]; changed: boolean } {
  let changed = false;
  const out = authors.map((author) => {
    if (!rule.userIds.has(author.userId)) return author;
    const next: Author = {
      ...author,
      displayName: REDACTED_DISPLAY_NAME,
      userId: rule.zeroIds ? ERASED_USER_ID : author.userId,
    };
    if (next.displayName !== author.displayName || next.userId !== author.userId) changed = true;
    return next;
  });
  return { authors: out, changed };
}

/**
 * Redacts a stored copy (an event envelope, a held consumed event) by the same rule as the course:
 * every author-shaped object naming the user (a `userId` beside a `displayName`: authors of
 * `registered`, `previous`/`next` authors of `metadata_updated`, a package's authors) gets the
 * `[redacted]` name; on erasure where permitted, every string that IS the user's id becomes the
 * erased id, wherever it sits (an author's userId, a version's `publishedBy`, the envelope's
 * `actor.id`, a field a later event type adds). Walking the whole value, rather than known paths,
 * keeps a future field from slipping through; keys are never rewritten.
 */
export function redactStoredCopy(value: unknown, rule: RedactionRule): { value: unknown; changed: boolean } {
  let changed = false;
  const walk = (item: unknown): unknown => {
    if (typeof item === 'string' && rule.zeroIds && rule.userIds.has(item)) {
      changed = true;
      return ERASED_USER_ID;
    }
    if (Array.isArray(item)) return item.map(walk);
    if (item === null || typeof item !== 'object') return item;
    const record = item as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [key, entry] of Object.entries(record)) out[key] = walk(entry);
    if (typeof record.userId === 'string' && rule.userIds.has(record.userId) && 'displayName' in record) {
      if (record.displayName !== REDACTED_DISPLAY_NAME) changed = true;
      out.displayName = REDACTED_DISPLAY_NAME;
    }
    return out;
  };
  const next = walk(value);
  return { value: next, changed };
}

/** Every string in a value that is a user id (`usr_…`), e.g. to ask the erasure record about a stored copy. */
export function userIdsIn(value: unknown): Set<string> {
  const found = new Set<string>();
  const walk = (item: unknown): void => {
    if (typeof item === 'string') {
      if (isId('user', item)) found.add(item);
    } else if (Array.isArray(item)) item.forEach(walk);
    else if (item !== null && typeof item === 'object') Object.values(item).forEach(walk);
  };
  walk(value);
  return found;
}

/**
 * A user id arriving after the user's erasure (a package's `publishedBy`, its actor, its first
 * author): the erased id where the retention class permits zeroing, else unchanged.
 */
export function withoutErasedId(userId: string, erased: ReadonlySet<string> | undefined, zeroIds: boolean): string {
  return zeroIds && erased?.has(userId) ? ERASED_USER_ID : userId;
}

/**
 * How the erasure record names the user: the SHA-256 of the id, so the record that keeps the id
 * erased on the way in is not itself a copy of it. Ids carry 80 random bits, so the digest cannot
 * be turned back into the id by trying them; whoever already holds the id can check it, which is
 * what the record is for.
 */
export function erasureKey(userId: string): string {
  return createHash('sha256').update(userId, 'utf8').digest('hex');
}
