import { ERASED_USER_ID } from '../../../platform/ids.js';

/*
 * The GDPR rules both subgraphs apply to what they keep: which retention classes permit zeroing
 * an id, and how a stored copy (an event envelope, a held consumed event) is redacted.
 */

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
 * Redacts a stored copy (an event envelope, a held consumed event): every author-shaped object
 * naming the user (a `userId` beside a `displayName`: authors of `registered`, `previous`/`next`
 * authors of `metadata_updated`, a package's authors) gets the `[redacted]` name; on erasure where
 * permitted, every string that IS the user's id becomes the erased id, wherever it sits (an
 * author's userId, a version's `publishedBy`, a review's `decidedBy`, the envelope's `actor.id`, a
 * field a later event type adds). Walking the whole value, rather than known paths, keeps a future
 * field from slipping through; keys are never rewritten.
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
