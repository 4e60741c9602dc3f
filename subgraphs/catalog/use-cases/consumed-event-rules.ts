import type { ConsumedEnvelope } from '../../../events/envelope.js';
import { permanentFailure } from '../../../events/consume/verdict.logic.js';
import type { Logger } from '../../../platform/observability/logger.js';
import type { FieldStamp, MetadataSource } from '../course/course-metadata.logic.js';
import type { WriteDeps } from './course-writes.js';
import { invalidLocale, type LocaleFields } from './consumed-payload.logic.js';

/** What a consumed-event use case needs besides its transaction. */
export interface ConsumedEventDeps extends WriteDeps {
  logger: Logger;
  /** The play package formats the catalog publishes (default PLAY_PACKAGE_FORMATS); others are held. */
  playPackageFormats?: readonly string[];
}

/**
 * The payload names its tenant and so does the envelope; a message where they differ cannot be
 * trusted for either, and no retry changes that: dead-letter it at once.
 */
export function requireSameTenant(envelope: ConsumedEnvelope, payloadTenantId: string): string {
  if (envelope.tenantId !== payloadTenantId) {
    throw permanentFailure(`${envelope.eventType} ${envelope.eventId}: payload tenantId differs from the envelope's`, {
      envelopeTenantId: envelope.tenantId,
      payloadTenantId,
    });
  }
  return payloadTenantId;
}

/**
 * Locale codes are checked with the admin path's BCP-47 rule on the way in: the schema only says
 * "string", and a code the rule refuses (a CR/LF in it) would be stored and break every answer
 * naming it. No retry makes it valid: dead-letter at once.
 */
export function requireValidLocales(envelope: ConsumedEnvelope, fields: LocaleFields): void {
  const invalid = invalidLocale(fields);
  if (invalid) {
    throw permanentFailure(
      `${envelope.eventType} ${envelope.eventId}: ${invalid.path} has ${JSON.stringify(invalid.value)}, which is not a BCP-47 locale code`,
      { path: invalid.path },
    );
  }
}

export function consumedEventStamp(envelope: ConsumedEnvelope, source: MetadataSource): FieldStamp {
  return { source, at: envelope.occurredAt, id: envelope.eventId };
}
