import type { Tx } from '../../../platform/db/database.js';
import type { Author } from '../course/course-metadata.logic.js';
import { erasedAmong } from '../gdpr/gdpr.repo.js';
import { redactAuthors, retentionPermitsZeroing } from '../gdpr/redaction.logic.js';

/** The erasure policy a write applies: retention classes under which an erasure zeroes author ids. */
export interface ErasurePolicy {
  gdprZeroingRetentionClasses: readonly string[];
}

/**
 * Authors arriving after an erasure (a later draft, a package, a dead letter replayed) are
 * redacted on the way in by the erasure registry, so an erased name never comes back.
 */
export async function redactErasedAuthors(
  tx: Tx,
  tenantId: string,
  authors: Author[] | undefined,
  retentionClass: string,
  deps: ErasurePolicy,
): Promise<Author[] | undefined> {
  if (!authors?.length) return authors;
  const erased = await erasedAmong(
    tx,
    tenantId,
    authors.map((author) => author.userId),
  );
  return withoutErased(authors, erased, retentionClass, deps);
}

/** `authors` with the `erased` users redacted (their ids zeroed where the retention class permits). */
export function withoutErased(
  authors: Author[] | undefined,
  erased: ReadonlySet<string> | undefined,
  retentionClass: string,
  deps: ErasurePolicy,
): Author[] | undefined {
  if (!authors?.length || !erased?.size) return authors;
  return redactAuthors(authors, {
    userIds: erased,
    zeroIds: retentionPermitsZeroing(retentionClass, deps.gdprZeroingRetentionClasses),
  }).authors;
}
