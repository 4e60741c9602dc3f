import type { Prisma, Tx } from '../../../platform/db/database.js';
import { OUTBOX_RELAY_LOCK } from '../../../events/publish/outbox.js';

export interface StoredEvent {
  id: bigint;
  envelope: { payload?: unknown; retentionClass?: string };
}

/**
 * Stored events of the tenant whose type starts with one of `eventTypePrefixes` (a subgraph's own:
 * `catalog.`, or `ai.` and `audit.ai.`) and that mention the user, published (the cold archive) or
 * not. Takes the outbox relay's lock first and waits for a running batch to end: a row still
 * unpublished once we hold it cannot be in flight, so what the relay sends next is the redacted
 * envelope. The wait is bounded; on timeout the transaction fails and the GDPR event is redelivered.
 */
export async function lockStoredEventsMentioning(
  tx: Tx,
  subject: { tenantId: string; userId: string },
  eventTypePrefixes: readonly string[],
): Promise<StoredEvent[]> {
  await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = '10s'`);
  await tx.$queryRaw`SELECT pg_advisory_xact_lock(${OUTBOX_RELAY_LOCK})::text`;
  const patterns = eventTypePrefixes.map((prefix) => `${prefix.replace(/[\\%_]/g, '\\$&')}%`);
  const rows = await tx.$queryRaw<StoredEvent[]>`
    SELECT id, envelope FROM "OutboxEvent"
    WHERE "tenantId" = ${subject.tenantId} AND "eventType" LIKE ANY (${patterns})
      AND strpos(envelope::text, ${subject.userId}) > 0
    ORDER BY id FOR UPDATE`;
  await tx.$executeRawUnsafe(`SET LOCAL lock_timeout TO DEFAULT`);
  return rows;
}

export async function replaceStoredEnvelope(tx: Tx, id: bigint, envelope: Prisma.InputJsonValue): Promise<void> {
  await tx.outboxEvent.update({ where: { id }, data: { envelope } });
}
