import type { Prisma, Tx } from '../../../platform/db/database.js';
import { lockStoredEventsMentioning, replaceStoredEnvelope } from '../../shared/gdpr/stored-events.repo.js';
import { redactStoredCopy, retentionPermitsZeroing } from '../../shared/gdpr/stored-copy.logic.js';
import { AI_SUBJECT_TABLES, erasureStatement } from './subject-columns.logic.js';

export interface Subject {
  tenantId: string;
  userId: string;
}

/** The AI subgraph's events in the outbox and its archive: `ai.review.completed` and the AUDIT stream's `audit.ai.*`. */
export const AI_EVENT_TYPE_PREFIXES = ['ai.', 'audit.ai.'] as const;

/** Rows changed per table (tables with none left out). */
export type RowsErased = Record<string, number>;

/** The subject's id replaced in every AI table row of the tenant (AI_SUBJECT_TABLES); one UPDATE per table. */
export async function eraseSubjectFromRows(tx: Tx, subject: Subject): Promise<RowsErased> {
  const changed: RowsErased = {};
  for (const table of AI_SUBJECT_TABLES) {
    const rows = await tx.$executeRaw(erasureStatement(table, subject));
    if (rows) changed[table.table] = rows;
  }
  return changed;
}

/**
 * The tenant's stored AI and audit events naming the subject (unpublished outbox rows and the
 * 13-month archive), each with the id zeroed where the row's own retention class permits: what the
 * relay sends next and what a replay of the archive sends carry the zero id. Returns how many changed.
 */
export async function eraseSubjectFromStoredEvents(tx: Tx, subject: Subject, zeroingClasses: readonly string[]): Promise<number> {
  let changed = 0;
  const userIds = new Set([subject.userId]);
  for (const row of await lockStoredEventsMentioning(tx, subject, AI_EVENT_TYPE_PREFIXES)) {
    const zeroIds = retentionPermitsZeroing(row.envelope.retentionClass ?? '', zeroingClasses);
    const redacted = redactStoredCopy(row.envelope, { userIds, zeroIds });
    if (!redacted.changed) continue;
    await replaceStoredEnvelope(tx, row.id, redacted.value as Prisma.InputJsonValue);
    changed += 1;
  }
  return changed;
}
