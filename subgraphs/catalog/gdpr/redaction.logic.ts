import { ERASED_USER_ID } from '../../../platform/ids.js';
import type { Author } from '../course/course-metadata.logic.js';

export const REDACTED_DISPLAY_NAME = '[redacted]';

export type GdprRequestType = 'access' | 'rectification' | 'erasure';

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
 * Redacts a stored event payload of any catalog event type: every object naming the user with a
 * `displayName` (authors of `registered`, `previous`/`next` authors of `metadata_updated`) is
 * rewritten by the same rule as the course. Walking the whole payload, rather than known paths,
 * keeps a future event type that lists authors from slipping through.
 */
export function redactPayload(payload: unknown, rule: RedactionRule): { payload: unknown; changed: boolean } {
  let changed = false;
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    const record = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(record)) out[key] = walk(item);
    if (typeof record.userId === 'string' && rule.userIds.has(record.userId) && 'displayName' in record) {
      if (record.displayName !== REDACTED_DISPLAY_NAME) {
        out.displayName = REDACTED_DISPLAY_NAME;
        changed = true;
      }
      if (rule.zeroIds) {
        out.userId = ERASED_USER_ID;
        changed = true;
      }
    }
    return out;
  };
  const next = walk(payload);
  return { payload: next, changed };
}
