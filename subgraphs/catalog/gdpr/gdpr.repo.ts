import { keyTuplesSql } from '../../../platform/db/bulk-sql.js';
import type { Prisma, Tx } from '../../../platform/db/database.js';
import { OUTBOX_RELAY_LOCK } from '../../../events/outbox-relay.js';

export async function recordErasure(tx: Tx, entry: { tenantId: string; userId: string; requestId: string }): Promise<void> {
  await tx.erasedAuthor.createMany({ data: [entry], skipDuplicates: true });
}

export async function erasedAmong(tx: Tx, tenantId: string, userIds: string[]): Promise<Set<string>> {
  const erased = await erasedAmongTenants(
    tx,
    userIds.map((userId) => ({ tenantId, userId })),
  );
  return erased.get(tenantId) ?? new Set();
}

/** Which of these (tenant, user) pairs were erased, as userIds per tenant; one statement. */
export async function erasedAmongTenants(
  tx: Tx,
  pairs: ReadonlyArray<{ tenantId: string; userId: string }>,
): Promise<Map<string, Set<string>>> {
  const erased = new Map<string, Set<string>>();
  if (!pairs.length) return erased;
  const rows = await tx.$queryRaw<Array<{ tenantId: string; userId: string }>>`
    SELECT "tenantId", "userId" FROM "ErasedAuthor" WHERE ("tenantId", "userId") IN (VALUES ${keyTuplesSql(
      pairs,
      (p) => p.tenantId,
      (p) => p.userId,
    )})`;
  for (const row of rows) erased.set(row.tenantId, (erased.get(row.tenantId) ?? new Set()).add(row.userId));
  return erased;
}

export interface StoredEvent {
  id: bigint;
  envelope: { payload?: unknown; retentionClass?: string };
}

/**
 * Stored catalog events of the tenant that mention the user, published (the cold archive) or not.
 * Takes the outbox relay's lock first and waits for a running batch to end: a row still unpublished
 * once we hold it cannot be in flight, so what the relay sends next is the redacted envelope. The
 * wait is bounded; on timeout the transaction fails and the GDPR event is redelivered.
 */
export async function lockStoredEventsMentioning(tx: Tx, tenantId: string, userId: string): Promise<StoredEvent[]> {
  await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = '10s'`);
  await tx.$queryRaw`SELECT pg_advisory_xact_lock(${OUTBOX_RELAY_LOCK})::text`;
  const rows = await tx.$queryRaw<StoredEvent[]>`
    SELECT id, envelope FROM "OutboxEvent"
    WHERE "tenantId" = ${tenantId} AND "eventType" LIKE 'catalog.%' AND strpos(envelope::text, ${userId}) > 0
    ORDER BY id FOR UPDATE`;
  await tx.$executeRawUnsafe(`SET LOCAL lock_timeout TO DEFAULT`);
  return rows;
}

export async function replaceStoredEnvelope(tx: Tx, id: bigint, envelope: Prisma.InputJsonValue): Promise<void> {
  await tx.outboxEvent.update({ where: { id }, data: { envelope } });
}
