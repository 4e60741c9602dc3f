import { idPattern } from '../../platform/ids.js';

/**
 * The envelope every event travels in (spec, "Event envelope"), ours and the ones we consume.
 * Unknown envelope members are allowed so a producer can add one without breaking consumers.
 */
export const ENVELOPE_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'schemas://events/envelope/v1',
  type: 'object',
  required: [
    'eventId',
    'eventType',
    'eventVersion',
    'schemaUri',
    'source',
    'occurredAt',
    'ingestedAt',
    'correlationId',
    'causationId',
    'tenantId',
    'actor',
    'partitionKey',
    'retentionClass',
    'dataResidency',
    'payload',
  ],
  properties: {
    // "ULID-like": ours are bare ULIDs, other producers' ids only need to be usable as a
    // Nats-Msg-Id and an inbox key.
    eventId: { type: 'string', pattern: '^[A-Za-z0-9_:.-]{1,128}$' },
    eventType: { type: 'string', pattern: '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*){2,}$' },
    eventVersion: { type: 'integer', minimum: 1 },
    schemaUri: { type: 'string', pattern: '^schemas://[a-z0-9_]+(/[a-z0-9_]+)*/v[1-9][0-9]*#sha256-[0-9a-f]{64}$' },
    source: {
      type: 'object',
      required: ['service', 'instance', 'commit'],
      properties: { service: { type: 'string', minLength: 1 }, instance: { type: 'string' }, commit: { type: 'string' } },
    },
    occurredAt: { type: 'string', format: 'date-time', pattern: 'Z$' },
    ingestedAt: { type: 'string', format: 'date-time', pattern: 'Z$' },
    correlationId: { type: 'string', minLength: 1 },
    causationId: { type: 'string', minLength: 1 },
    tenantId: { type: 'string', pattern: idPattern('tenant') },
    actor: {
      type: 'object',
      required: ['type', 'id'],
      properties: { type: { type: 'string', minLength: 1 }, id: { type: 'string', minLength: 1 } },
    },
    partitionKey: { type: 'string', minLength: 1 },
    retentionClass: { type: 'string', minLength: 1 },
    dataResidency: { type: 'string', minLength: 1 },
    payload: { type: 'object' },
  },
} as const;

/** `schemas://<domain>/<aggregate>/<event>/v<N>`, then optionally `#sha256-<64 hex>`. */
export const SCHEMA_URI = /^(schemas:\/\/[a-z0-9_]+(?:\/[a-z0-9_]+)*\/v[1-9][0-9]*)(?:#sha256-([0-9a-f]{64}))?$/;

/**
 * The envelope as the catalog reads other services' events (tolerant reader): only what handlers
 * use is required (the event's id, type, version, tenant, occurredAt, payload); the other members
 * are checked for their type where present; and `schemaUri` may come without the digest fragment
 * the spec defines for the catalog's own events.
 */
export const CONSUMED_ENVELOPE_SCHEMA = {
  ...ENVELOPE_SCHEMA,
  $id: 'schemas://events/envelope/v1/consumed',
  required: ['eventId', 'eventType', 'eventVersion', 'tenantId', 'occurredAt', 'payload'],
  properties: {
    ...ENVELOPE_SCHEMA.properties,
    schemaUri: { type: 'string', pattern: SCHEMA_URI.source },
  },
} as const;

/** The envelope of every event (spec, "Event envelope"). */
export interface EventEnvelope<P extends object = Record<string, unknown>> {
  /** A bare ULID for the events we produce; "ULID-like" for the ones we consume. */
  eventId: string;
  /** `<domain>.<aggregate>.<event>`, e.g. `catalog.course_version.published`. */
  eventType: string;
  eventVersion: number;
  /** `schemas://<domain>/<aggregate>/<event>/v<N>#sha256-<digest of the canonical schema>` */
  schemaUri: string;
  source: { service: string; instance: string; commit: string };
  /** ISO 8601 UTC. */
  occurredAt: string;
  /** ISO 8601 UTC: when the event entered the event system (the outbox write). */
  ingestedAt: string;
  correlationId: string;
  causationId: string;
  tenantId: string;
  actor: { type: string; id: string };
  /** courseId, or taxonomyId for taxonomy events. */
  partitionKey: string;
  retentionClass: string;
  dataResidency: string;
  payload: P;
}

/** What a consumer needs of an envelope; see ConsumedEnvelope. */
type UsedByConsumers = 'eventId' | 'eventType' | 'eventVersion' | 'tenantId' | 'occurredAt' | 'payload';

/**
 * An envelope as a consumer reads it (tolerant reader, design §5): the members handlers use are
 * required; the rest of the spec's metadata may be missing from another producer's envelope (the
 * spec shows only the catalog's own envelope) and is typed where present. A missing
 * correlationId makes the consumed event the root of its own correlation, as ours are.
 */
export type ConsumedEnvelope<P extends object = Record<string, unknown>> = Pick<EventEnvelope<P>, UsedByConsumers> &
  Partial<Omit<EventEnvelope<P>, UsedByConsumers>>;
