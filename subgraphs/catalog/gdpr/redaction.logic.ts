import { createHash } from 'node:crypto';
import { ERASED_USER_ID, isId } from '../../../platform/ids.js';
import type { Author } from '../course/course-metadata.logic.js';
import {
  REDACTED_DISPLAY_NAME,
  redactStoredCopy,
  retentionPermitsZeroing,
  type RedactionRule,
} from '../../shared/gdpr/stored-copy.logic.js';

// Shared with the AI subgraph's erasure (subgraphs/shared/gdpr); re-exported for the catalog's callers.
export { REDACTED_DISPLAY_NAME, redactStoredCopy, retentionPermitsZeroing, type RedactionRule };

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
