import { newId } from '../../../platform/ids.js';
import type { EventSource } from '../../../events/envelope.js';
import type { EmitInput } from '../../../events/publish/outbox.js';

/** Valid payloads per event type, shared by the unit and integration suites. */
export function coursePublishedPayload(overrides: Record<string, unknown> = {}) {
  return {
    courseVersionId: newId('courseVersion'),
    courseId: newId('course'),
    versionLabel: '1.2.3',
    publishedBy: newId('user'),
    durationMinutes: 90,
    locales: ['en', 'de'],
    playPackage: { playPackageId: newId('playPackage'), sha256: 'a'.repeat(64), format: 'v2' },
    ...overrides,
  };
}

export function courseRegisteredPayload(courseId = newId('course')) {
  return {
    courseId,
    slug: 'triage-basics',
    title: { en: 'Triage basics' },
    defaultLocale: 'en',
    visibility: 'org',
    authors: [{ userId: newId('user'), role: 'author', displayName: 'Dr. Ada' }],
    taxonomy: [{ taxonomyId: newId('taxonomy'), nodePath: 'clinical/triage' }],
  };
}

export function playPackageBuiltPayload(tenantId: string, overrides: Record<string, unknown> = {}) {
  return {
    courseDraftId: newId('courseDraft'),
    tenantId,
    slug: 'triage-basics',
    title: { en: 'Triage basics' },
    defaultLocale: 'en',
    versionLabel: '1.0.0',
    durationMinutes: 45,
    locales: ['en'],
    playPackage: { playPackageId: newId('playPackage'), sha256: 'b'.repeat(64), format: 'v1' },
    publishedBy: newId('user'),
    ...overrides,
  };
}

export const testSource: EventSource = { service: 'catalog', instance: 'test-1', commit: 'abc123' };

/** The envelope fields of an emit for a course event, without payload. */
export function courseEmit(tenantId: string, partitionKey: string): Omit<EmitInput, 'eventType'> {
  return {
    tenantId,
    partitionKey,
    actor: { type: 'system', id: 'catalog' },
    retentionClass: 'operational',
    dataResidency: 'EU',
  };
}
