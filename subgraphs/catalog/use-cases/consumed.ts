import type { EventEnvelope } from '../../../events/envelope.js';
import { permanentFailure } from '../../../events/consumer-runner.js';
import type { Logger } from '../../../platform/logger.js';
import type { FieldStamp, MetadataSource } from '../course/course-metadata.logic.js';
import type { WriteDeps } from './course-writes.js';

/** What a consumed-event use case needs besides its transaction. */
export interface ConsumedEventDeps extends WriteDeps {
  logger: Logger;
}

/**
 * The payload names its tenant and so does the envelope; a message where they differ cannot be
 * trusted for either, and no retry changes that: dead-letter it at once.
 */
export function requireSameTenant(envelope: EventEnvelope, payloadTenantId: string): string {
  if (envelope.tenantId !== payloadTenantId) {
    throw permanentFailure(`${envelope.eventType} ${envelope.eventId}: payload tenantId differs from the envelope's`, {
      envelopeTenantId: envelope.tenantId,
      payloadTenantId,
    });
  }
  return payloadTenantId;
}

export function stampOf(envelope: EventEnvelope, source: MetadataSource): FieldStamp {
  return { source, at: envelope.occurredAt, id: envelope.eventId };
}
