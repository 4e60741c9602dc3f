import type { Tx } from '../../platform/db/database.js';
import type { EventEnvelope } from '../../events/envelope.js';
import type { EventProducer } from '../../events/publish/outbox.js';

export const CATALOG_EVENT_TYPES = [
  'catalog.course.registered',
  'catalog.course.metadata_updated',
  'catalog.course.visibility_changed',
  'catalog.course.archived',
  'catalog.course_version.published',
  'catalog.course_version.deprecated',
  'catalog.course_version.withdrawn',
  // Not in the spec's table: a GDPR erasure's change to a version (docs/catalog-and-events.md, GDPR).
  'catalog.course_version.redacted',
  'catalog.taxonomy.updated',
] as const;
export type CatalogEventType = (typeof CATALOG_EVENT_TYPES)[number];

export interface Actor {
  type: 'system' | 'user';
  id: string;
}

/** The actor of everything the catalog does on its own, i.e. in reaction to consumed events. */
export const CATALOG_SYSTEM_ACTOR: Actor = { type: 'system', id: 'catalog-svc' };

/** Message header carrying a version's position in its course's publish order. */
export const COURSE_VERSION_SEQ_HEADER = 'x-course-version-seq';

export interface CatalogEvent {
  eventType: CatalogEventType;
  payload: object;
  tenantId: string;
  /** courseId, or taxonomyId for taxonomy events. */
  partitionKey: string;
  actor: Actor;
  retentionClass: string;
  dataResidency: string;
  /** Extra message headers, e.g. the per-course version sequence. */
  headers?: Record<string, string>;
}

/**
 * The catalog's port to the outbox, bound to one transaction and one cause (an API request or a
 * consumed event), so the use cases say what happened and nothing about envelopes, correlation or
 * traces. Events are validated against their schema when written, and the row commits or rolls
 * back with the state change.
 */
export interface CatalogEmitter {
  emit(event: CatalogEvent): Promise<EventEnvelope<object>[]>;
}

export interface RequestCause {
  /** The request id: every event of one request shares it. */
  correlationId: string;
  traceparent?: string;
}

export interface CatalogEvents {
  /** Events of an API request: correlated by the request, caused by nothing earlier. */
  forRequest(tx: Tx, cause: RequestCause): CatalogEmitter;
  /**
   * Events of a consumed event applied outside the consumer (a held package released later):
   * caused by it and in its correlation, as the consumer's own `ctx.emit` would write them.
   */
  forConsumedEvent(tx: Tx, event: { eventId: string; correlationId?: string }): CatalogEmitter;
}

export function createCatalogEvents(producer: EventProducer): CatalogEvents {
  return {
    forRequest: (tx, cause) => ({
      emit: (event) => producer.emit(tx, { ...event, correlationId: cause.correlationId, traceparent: cause.traceparent }),
    }),
    forConsumedEvent: (tx, consumed) => ({
      emit: (event) =>
        producer.emit(tx, { ...event, correlationId: consumed.correlationId ?? consumed.eventId, causationId: consumed.eventId }),
    }),
  };
}
