import type { Tx } from '../../../platform/db/database.js';
import type { EmitInput, EventProducer, OutboxRow } from '../../../events/publish/outbox.js';

export interface AuditActor {
  type: string;
  id: string;
}

/** One audit fact; becomes event type `audit.ai.<action>` on subject `audit.ai.<action>.v1`. */
export interface AuditEvent {
  action: string;
  tenantId: string;
  actor: AuditActor;
  target?: { type: string; id: string };
  /** Ids, hashes, codes and counts only: never prompt or output text. */
  details?: Record<string, unknown>;
  retentionClass: string;
  dataResidency: string;
  correlationId?: string;
  traceparent?: string;
  requestId?: string;
}

/**
 * Where audit events go. Recording happens inside the transaction that makes the audited change,
 * so an audit event exists if and only if the change does (transactional outbox).
 */
export interface AuditSink {
  record(tx: Tx, event: AuditEvent): Promise<void>;
  /** The event's validated outbox rows, for a caller that writes them in its own statement. */
  prepare(event: AuditEvent): OutboxRow[];
}

/** Writes through the shared outbox; the outbox relay publishes to NATS (or the in-process bus). */
export function outboxAuditSink(producer: EventProducer): AuditSink {
  const input = (event: AuditEvent): EmitInput => ({
    eventType: `audit.ai.${event.action}`,
    payload: {
      action: event.action,
      actor: event.actor,
      ...(event.target ? { target: event.target } : {}),
      details: event.details ?? {},
    },
    tenantId: event.tenantId,
    // Per-tenant order is what an auditor reads; the spec names no other key for these events.
    partitionKey: event.tenantId,
    actor: event.actor,
    retentionClass: event.retentionClass,
    dataResidency: event.dataResidency,
    correlationId: event.correlationId,
    traceparent: event.traceparent,
    headers: event.requestId ? { 'x-request-id': event.requestId } : undefined,
  });
  return {
    async record(tx, event) {
      await producer.emit(tx, input(event));
    },
    prepare: (event) => producer.prepare(input(event)).rows,
  };
}
