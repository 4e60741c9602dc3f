import type { ConsumedEnvelope } from '../../../events/envelope.js';
import { permanentFailure } from '../../../events/consume/verdict.logic.js';
import type { Tx } from '../../../platform/db/database.js';
import type { Redis } from 'ioredis';
import {
  eraseSubjectFromIdempotencyRedis,
  eraseSubjectFromIdempotencyTables,
  type IdempotencyRecordsErased,
} from '../../../platform/idempotency/subject-erasure.js';
import type { Logger } from '../../../platform/observability/logger.js';
import { DEFAULT_TENANT } from '../assist/assist.repo.js';
import { retentionPermitsZeroing } from '../../shared/gdpr/stored-copy.logic.js';
import { eraseSubjectFromRows, eraseSubjectFromStoredEvents, type RowsErased } from './ai-gdpr.repo.js';
import { decideAiGdprRequest } from './subject-columns.logic.js';

/** gdpr.subject_request.received v1 (events/schemas/gdpr/subject_request/received/v1.json). */
interface SubjectRequestReceived {
  requestId: string;
  tenantId: string;
  subjectType: string;
  subjectId: string;
  requestType: string;
}

export interface AiGdprDeps {
  logger: Logger;
  /** GDPR_ZEROING_RETENTION_CLASSES: the retention classes whose records may have an id zeroed. */
  zeroingClasses: readonly string[];
  /** The state Redis (REDIS_URL), where the gateway keeps Idempotency-Key records; absent without it. */
  idempotencyRedis?: Redis;
}

export interface AiGdprOutcome {
  erased: boolean;
  rows: RowsErased;
  storedEvents: number;
  /** Idempotency-Key records, in the tables and the state Redis. */
  idempotencyRecords: IdempotencyRecordsErased;
}

/**
 * The AI subgraph's side of a data-subject request: on erasure of a user, the user's id becomes
 * `usr_` + 26 zeros (the catalog's erased id) in every row of the tenant's AI tables that holds it,
 * where the tenant's retention class permits zeroing (AI rows have no class of their own: the
 * tenant's is the one their events carry), and in the tenant's stored AI and audit events by each
 * event's own class. One transaction with the inbox row (the consumer runner's), so a redelivery
 * finds the request handled; running it again would change nothing anyway.
 *
 * No `ai.*` event announces it: no reader keeps a copy this subgraph could tell (the gateways never
 * cache AI answers; consumers of `ai.review.completed` receive the GDPR request themselves).
 */
export async function handleAiGdprRequest(tx: Tx, envelope: ConsumedEnvelope, deps: AiGdprDeps): Promise<AiGdprOutcome> {
  const p = envelope.payload as unknown as SubjectRequestReceived;
  if (envelope.tenantId !== p.tenantId) {
    // A message whose payload and envelope name different tenants cannot be trusted for either.
    throw permanentFailure(`${envelope.eventType} ${envelope.eventId}: payload tenantId differs from the envelope's`, {
      envelopeTenantId: envelope.tenantId,
      payloadTenantId: p.tenantId,
    });
  }
  const log = deps.logger.child({ requestId: p.requestId, tenantId: p.tenantId });
  const decision = decideAiGdprRequest(p);
  if (decision.kind === 'invalid') throw permanentFailure(decision.message, { requestId: p.requestId, field: 'requestType' });
  if (decision.kind === 'not_applied') {
    log.info(
      { reason: decision.reason, requestType: String(p.requestType).slice(0, 64) },
      'GDPR request: nothing for the AI subgraph to change',
    );
    return { erased: false, rows: {}, storedEvents: 0, idempotencyRecords: { deleted: 0, rewritten: 0 } };
  }
  const subject = { tenantId: p.tenantId, userId: p.subjectId };
  const settings = await tx.tenantSettings.findUnique({
    where: { tenantId: subject.tenantId },
    select: { retentionClass: true },
  });
  const retentionClass = settings?.retentionClass ?? DEFAULT_TENANT.retentionClass;
  const rows = retentionPermitsZeroing(retentionClass, deps.zeroingClasses) ? await eraseSubjectFromRows(tx, subject) : {};
  const storedEvents = await eraseSubjectFromStoredEvents(tx, subject, deps.zeroingClasses);
  const idempotencyRecords = await eraseIdempotencyRecords(tx, subject, deps.idempotencyRedis);
  log.info({ retentionClass, rows, storedEvents, idempotencyRecords }, 'GDPR erasure applied to the AI subgraph');
  return { erased: true, rows, storedEvents, idempotencyRecords };
}

/**
 * The records kept for Idempotency-Key retries, of the gateway and of both subgraphs (one table
 * each, and the state Redis): erased here once for the whole platform, whatever the retention
 * class (platform/idempotency/subject-erasure.ts says why). In Redis before the commit: a failure
 * there fails the transaction and the request is redelivered; erasing twice changes nothing.
 */
async function eraseIdempotencyRecords(
  tx: Tx,
  subject: { tenantId: string; userId: string },
  redis: Redis | undefined,
): Promise<IdempotencyRecordsErased> {
  const inTables = await eraseSubjectFromIdempotencyTables(tx, subject);
  if (!redis) return inTables;
  const inRedis = await eraseSubjectFromIdempotencyRedis(redis, subject);
  return { deleted: inTables.deleted + inRedis.deleted, rewritten: inTables.rewritten + inRedis.rewritten };
}
