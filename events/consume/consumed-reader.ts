import { AppError } from '../../platform/errors/errors.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { ConsumedEnvelope } from '../envelope.js';
import type { SchemaRegistry } from '../schemas/registry.js';
import type { SchemaUriReading } from '../schemas/schema-uri.logic.js';

/** Distinct producer digests logged per consumer; beyond it they are only counted. */
const MAX_LOGGED_DIGESTS = 20;

/**
 * A consumed message body, checked as the tolerant reader reads it: the envelope members handlers
 * use, the event type and version of this consumer, schemaUri naming that schema (digest or not),
 * and the payload against our copy of the producer's schema in consumer mode. Throws the
 * AppError that dead-letters it.
 */
export function readConsumed(
  registry: SchemaRegistry,
  consumer: { eventType: string; version: number },
  parsed: unknown,
): { envelope: ConsumedEnvelope; schemaUri: SchemaUriReading } {
  const value = parsed as Partial<ConsumedEnvelope> | null;
  if (value?.eventType !== consumer.eventType || value.eventVersion !== consumer.version) {
    throw new AppError(
      'schema.invalid_event',
      `Expected ${consumer.eventType} v${consumer.version}, got ${String(value?.eventType)} v${String(value?.eventVersion)}`,
      { details: { path: '/eventType', message: 'does not match the consumer' } },
    );
  }
  const read = registry.readConsumedEnvelope(parsed);
  registry.validate(read.envelope.eventType, read.envelope.eventVersion, read.envelope.payload, 'consume');
  return read;
}

/**
 * The producer's copy of the schema differs from ours (a compatible change we have not taken, or
 * one we have and they have not): handled all the same, and logged once per digest (a bounded
 * number of them; the count is in the consumer's stats).
 */
export function digestMismatchLog(
  logger: Logger,
  registry: SchemaRegistry,
): { note(envelope: ConsumedEnvelope, digest: string): void } {
  const logged = new Set<string>();
  return {
    note(envelope, digest) {
      if (logged.has(digest) || logged.size >= MAX_LOGGED_DIGESTS) return;
      logged.add(digest);
      logger.warn(
        {
          eventId: envelope.eventId,
          schemaUri: envelope.schemaUri,
          ours: registry.digest(envelope.eventType, envelope.eventVersion),
        },
        "the producer's schema digest differs from our copy of its schema; handled (tolerant reader)",
      );
    },
  };
}
