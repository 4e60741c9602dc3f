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
