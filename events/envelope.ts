import { newUlid } from '../platform/ids.js';
import type { Clock } from '../platform/clock.js';
import type { EventEnvelope } from './schemas/envelope-schema.js';
import type { SchemaRegistry } from './schemas/registry.js';

export type { ConsumedEnvelope, EventEnvelope } from './schemas/envelope-schema.js';

export interface EventSource {
  service: string;
  instance: string;
  commit: string;
}

export interface EnvelopeInput<P extends object = Record<string, unknown>> {
  eventType: string;
  eventVersion: number;
  payload: P;
  tenantId: string;
  partitionKey: string;
  actor: { type: string; id: string };
  retentionClass: string;
  dataResidency: string;
  /** Defaults to the new event's own id: a root event starts its own correlation. */
  correlationId?: string;
  /** Defaults to the new event's own id. A handler passes the consumed event's id. */
  causationId?: string;
  /** Defaults to now; set it when the fact happened earlier than it is recorded. */
  occurredAt?: Date | string;
  eventId?: string;
}

/** `<eventType>.v<eventVersion>`, e.g. `catalog.course_version.published.v1`. */
export function subjectFor(eventType: string, eventVersion: number): string {
  return `${eventType}.v${eventVersion}`;
}

/** The inverse of `subjectFor`, for subjects that follow the rule (undefined otherwise). */
export function parseSubject(subject: string): { eventType: string; eventVersion: number } | undefined {
  const match = /^(.+)\.v([1-9][0-9]*)$/.exec(subject);
  return match ? { eventType: match[1], eventVersion: Number(match[2]) } : undefined;
}

export function buildEnvelope<P extends object>(
  deps: { clock: Clock; registry: SchemaRegistry; source: EventSource; newId?: () => string },
  input: EnvelopeInput<P>,
): EventEnvelope<P> {
  const now = deps.clock.now();
  const eventId = input.eventId ?? (deps.newId ? deps.newId() : newUlid(now.getTime()));
  return {
    eventId,
    eventType: input.eventType,
    eventVersion: input.eventVersion,
    schemaUri: deps.registry.schemaUri(input.eventType, input.eventVersion),
    source: { ...deps.source },
    occurredAt: new Date(input.occurredAt ?? now).toISOString(),
    ingestedAt: now.toISOString(),
    correlationId: input.correlationId ?? eventId,
    causationId: input.causationId ?? eventId,
    tenantId: input.tenantId,
    actor: { ...input.actor },
    partitionKey: input.partitionKey,
    retentionClass: input.retentionClass,
    dataResidency: input.dataResidency,
    payload: input.payload,
  };
}
