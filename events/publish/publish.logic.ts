import { AppError } from '../../platform/errors/errors.js';
import type { EventEnvelope, EventSource } from '../envelope.js';
import type { SchemaRegistry } from '../schemas/registry.js';

/**
 * An event as an operator or a tester writes it for `npm run events:publish`: the spec's envelope
 * without what a publisher computes. eventId, occurredAt, ingestedAt, schemaUri (with the digest
 * of our copy of the schema), correlationId and causationId (the event's own id: a root event) and
 * source are filled in when absent; a member given is kept as written.
 */
export type EnvelopeDraft = Partial<EventEnvelope> & Pick<EventEnvelope, 'eventType' | 'tenantId' | 'payload'>;

const REQUIRED = ['eventType', 'tenantId', 'actor', 'partitionKey', 'retentionClass', 'dataResidency', 'payload'] as const;

/**
 * The complete envelope of a draft, checked as the catalog's consumers will read it (envelope,
 * schemaUri, payload against our copy of the producer's schema), so what the tool publishes is
 * what a consumer admits. Throws 'events.invalid_draft' naming what is missing or wrong.
 */
export function completeEnvelope(
  draft: unknown,
  deps: { registry: SchemaRegistry; now: Date; newId: () => string; source: EventSource },
): EventEnvelope {
  if (draft === null || typeof draft !== 'object' || Array.isArray(draft))
    throw invalidDraft('the file must hold one JSON object: an event envelope');
  const given = draft as Partial<EventEnvelope>;
  const missing = REQUIRED.filter((member) => given[member] === undefined);
  if (missing.length) throw invalidDraft(`the envelope needs ${missing.join(', ')}`);
  const eventVersion = given.eventVersion ?? 1;
  const eventType = given.eventType!;
  if (!deps.registry.has(eventType, eventVersion))
    throw invalidDraft(`no schema is registered for ${eventType} v${eventVersion}`);
  const eventId = given.eventId ?? deps.newId();
  const now = deps.now.toISOString();
  const envelope: EventEnvelope = {
    eventId,
    eventType,
    eventVersion,
    schemaUri: given.schemaUri ?? deps.registry.schemaUri(eventType, eventVersion),
    source: given.source ?? deps.source,
    occurredAt: given.occurredAt ?? now,
    ingestedAt: given.ingestedAt ?? now,
    correlationId: given.correlationId ?? eventId,
    causationId: given.causationId ?? eventId,
    tenantId: given.tenantId!,
    actor: given.actor!,
    partitionKey: given.partitionKey!,
    retentionClass: given.retentionClass!,
    dataResidency: given.dataResidency!,
    payload: given.payload!,
  };
  try {
    deps.registry.readConsumedEnvelope(envelope);
    deps.registry.validate(eventType, eventVersion, envelope.payload, 'consume');
  } catch (error) {
    throw invalidDraft((error as Error).message);
  }
  return envelope;
}

function invalidDraft(message: string): AppError {
  return new AppError('events.invalid_draft', message, { status: 400 });
}
