import type { Prisma, Tx } from '../../platform/db/database.js';
import { gatedInsertSql, insertSql, type Column, type Gated } from '../../platform/db/bulk-sql.js';
import { AppError } from '../../platform/errors/errors.js';
import type { Clock } from '../../platform/clock.js';
import { buildEnvelope, subjectFor, type EnvelopeInput, type EventEnvelope, type EventSource } from '../envelope.js';
import { versionsToPublish } from '../schemas/dual-publish.logic.js';
import type { SchemaRegistry } from '../schemas/registry.js';
import { newTraceparent } from '../../platform/observability/trace-context.js';

/**
 * Key of the advisory lock every relay batch holds SHARED while it reads, publishes and marks rows,
 * and a GDPR redaction takes EXCLUSIVE before it rewrites stored events
 * (subgraphs/catalog/gdpr/gdpr.repo.ts): a row still unpublished once the redaction holds it cannot
 * be in flight. Leadership is the lease's (relay-lease.ts), so batches never wait for each other
 * here: a new leader's batch runs beside a frozen one's.
 */
export const OUTBOX_RELAY_LOCK = 0x6f7574626f78n; // "outbox"

export interface OutboxWrite {
  envelopes: EventEnvelope<object>[];
  /** W3C traceparent of the work that produced the events; a new trace is started when absent. */
  traceparent?: string;
  /** Extra message headers, e.g. `x-request-id`. */
  headers?: Record<string, string>;
}

/** One OutboxEvent row as written; `id` and `txid` come from the database. */
export interface OutboxRow {
  eventId: string;
  eventType: string;
  eventVersion: number;
  subject: string;
  tenantId: string;
  partitionKey: string;
  envelope: EventEnvelope<object>;
  headers: Record<string, string>;
}

/**
 * The outbox rows of some events, each payload validated first: an invalid event fails the
 * business transaction instead of reaching consumers.
 */
export function outboxRows(registry: SchemaRegistry, write: OutboxWrite): OutboxRow[] {
  for (const envelope of write.envelopes) {
    registry.validateEnvelope(envelope);
    registry.validate(envelope.eventType, envelope.eventVersion, envelope.payload, 'produce');
  }
  const headers = {
    ...(write.headers ?? {}),
    'Content-Type': 'application/json',
    traceparent: write.traceparent ?? newTraceparent(),
  };
  return write.envelopes.map((envelope) => ({
    eventId: envelope.eventId,
    eventType: envelope.eventType,
    eventVersion: envelope.eventVersion,
    subject: subjectFor(envelope.eventType, envelope.eventVersion),
    tenantId: envelope.tenantId,
    partitionKey: envelope.partitionKey,
    envelope,
    headers,
  }));
}

const OUTBOX_COLUMNS: readonly Column<OutboxRow>[] = [
  { name: 'eventId', type: 'text', value: (r) => r.eventId },
  { name: 'eventType', type: 'text', value: (r) => r.eventType },
  { name: 'eventVersion', type: 'int', value: (r) => r.eventVersion },
  { name: 'subject', type: 'text', value: (r) => r.subject },
  { name: 'tenantId', type: 'text', value: (r) => r.tenantId },
  { name: 'partitionKey', type: 'text', value: (r) => r.partitionKey },
  { name: 'envelope', type: 'jsonb', value: (r) => r.envelope },
  { name: 'headers', type: 'jsonb', value: (r) => r.headers },
];

/** One INSERT of the rows, in their order (ids, and so publish order, follow it). */
export function outboxInsertSql(rows: readonly OutboxRow[], onlyIf?: Prisma.Sql): Prisma.Sql {
  return insertSql('OutboxEvent', OUTBOX_COLUMNS, rows, { onlyIf });
}

/** Outbox rows of several requests in one statement, each written only if its gate is open (bulk-sql.ts). */
export function gatedOutboxInsertSql(rows: readonly Gated<OutboxRow>[], gateKeys: Prisma.Sql): Prisma.Sql {
  return gatedInsertSql('OutboxEvent', OUTBOX_COLUMNS, rows, gateKeys);
}

/**
 * Inserts the events into the outbox inside the caller's transaction, so they are published if
 * and only if the state change commits.
 */
export async function writeOutbox(tx: Tx, registry: SchemaRegistry, write: OutboxWrite): Promise<void> {
  await tx.$executeRaw(outboxInsertSql(outboxRows(registry, write)));
}

export type EmitInput = Omit<EnvelopeInput<object>, 'eventVersion' | 'payload'> & {
  /** The payload when a single version of the event type is current. */
  payload?: object;
  /** One payload per version while several are published (dual-publish window). */
  payloads?: Record<number, object>;
  traceparent?: string;
  headers?: Record<string, string>;
};

export interface EventProducer {
  /** Builds the envelope(s) of one fact and writes them to the outbox in `tx`. */
  emit(tx: Tx, input: EmitInput): Promise<EventEnvelope<object>[]>;
  /** Builds the envelope(s) and their validated outbox rows, for a caller that writes them itself. */
  prepare(input: EmitInput): { envelopes: EventEnvelope<object>[]; rows: OutboxRow[] };
}

export interface EventProducerDeps {
  registry: SchemaRegistry;
  clock: Clock;
  source: EventSource;
  dualPublishDays: number;
  newId?: () => string;
}

export function createEventProducer(deps: EventProducerDeps): EventProducer {
  const prepare = (input: EmitInput) => {
    const { payload, payloads, traceparent, headers, ...rest } = input;
    const required = versionsToPublish(
      input.eventType,
      deps.registry.info(input.eventType),
      deps.clock.now(),
      deps.dualPublishDays,
    );
    const byVersion = payloadsFor(input.eventType, required, payload, payloads);
    const envelopes = required.map((eventVersion) =>
      buildEnvelope(deps, { ...rest, eventVersion, payload: byVersion.get(eventVersion)! }),
    );
    // All versions of one fact share the correlation; each is its own event with its own id.
    return { envelopes, rows: outboxRows(deps.registry, { envelopes, traceparent, headers }) };
  };
  return {
    prepare,
    async emit(tx, input) {
      const { envelopes, rows } = prepare(input);
      await tx.$executeRaw(outboxInsertSql(rows));
      return envelopes;
    },
  };
}

function payloadsFor(
  eventType: string,
  required: number[],
  payload?: object,
  payloads?: Record<number, object>,
): Map<number, object> {
  // These are programming errors of the producer, never the client's: 500.
  if (payload && payloads) {
    throw new AppError('events.ambiguous_payload', `Give either payload or payloads for ${eventType}, not both`, { status: 500 });
  }
  if (payload) {
    if (required.length !== 1) {
      throw new AppError(
        'events.missing_version_payload',
        `${eventType} is dual-published (v${required.join(', v')}): give one payload per version`,
        {
          status: 500,
          details: { eventType, required },
        },
      );
    }
    return new Map([[required[0], payload]]);
  }
  const missing = required.filter((version) => !payloads?.[version]);
  if (missing.length) {
    throw new AppError('events.missing_version_payload', `${eventType} needs a payload for v${missing.join(', v')}`, {
      status: 500,
      details: { eventType, required, missing },
    });
  }
  return new Map(required.map((version) => [version, payloads![version]]));
}
