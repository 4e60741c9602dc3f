import { describe, expect, it } from 'vitest';
import { isUlid, newId } from '../../../platform/ids.js';
import { manualClock } from '../../../platform/clock.js';
import { buildEnvelope, parseSubject, subjectFor } from '../../../events/envelope.js';
import { loadSchemaRegistry } from '../../../events/schemas/registry.js';
import { childTraceparent, isTraceparent, newTraceparent } from '../../../platform/observability/trace-context.js';
import { coursePublishedPayload, testSource } from './fixtures.js';

const registry = loadSchemaRegistry();

describe('event envelope', () => {
  it('names subjects <eventType>.v<version> and parses them back', () => {
    expect(subjectFor('catalog.course_version.published', 1)).toBe('catalog.course_version.published.v1');
    expect(subjectFor('content.play_package.built', 1)).toBe('content.play_package.built.v1');
    expect(parseSubject('catalog.course.registered.v12')).toEqual({ eventType: 'catalog.course.registered', eventVersion: 12 });
    expect(parseSubject('catalog.course.registered')).toBeUndefined();
  });

  it('builds a complete, valid envelope from the clock and the registry', () => {
    const clock = manualClock('2026-11-21T08:30:00.000Z');
    const tenantId = newId('tenant');
    const payload = coursePublishedPayload();
    const envelope = buildEnvelope(
      { clock, registry, source: testSource },
      {
        eventType: 'catalog.course_version.published',
        eventVersion: 1,
        payload,
        tenantId,
        partitionKey: payload.courseId,
        actor: { type: 'system', id: 'catalog' },
        retentionClass: 'operational',
        dataResidency: 'EU',
        occurredAt: '2026-11-21T08:29:00+01:00',
      },
    );
    expect(isUlid(envelope.eventId)).toBe(true);
    expect(envelope).toEqual({
      eventId: envelope.eventId,
      eventType: 'catalog.course_version.published',
      eventVersion: 1,
      schemaUri: registry.schemaUri('catalog.course_version.published', 1),
      source: testSource,
      occurredAt: '2026-11-21T07:29:00.000Z',
      ingestedAt: '2026-11-21T08:30:00.000Z',
      correlationId: envelope.eventId,
      causationId: envelope.eventId,
      tenantId,
      actor: { type: 'system', id: 'catalog' },
      partitionKey: payload.courseId,
      retentionClass: 'operational',
      dataResidency: 'EU',
      payload,
    });
    expect(() => registry.validateEnvelope(envelope)).not.toThrow();
    expect(() => registry.validateEnvelope({ ...envelope, occurredAt: '2026-11-21T08:29:00+01:00' })).toThrow();
    expect(() =>
      registry.validateEnvelope({ ...envelope, schemaUri: 'schemas://catalog/course_version/published/v1' }),
    ).toThrow();
  });

  it('keeps a given correlation and causation', () => {
    const envelope = buildEnvelope(
      { clock: manualClock(), registry, source: testSource, newId: () => '01JEVENT00000000000000000A' },
      {
        eventType: 'catalog.course.archived',
        eventVersion: 1,
        payload: { courseId: newId('course') },
        tenantId: newId('tenant'),
        partitionKey: 'p',
        actor: { type: 'user', id: newId('user') },
        retentionClass: 'operational',
        dataResidency: 'EU',
        correlationId: 'req-7',
        causationId: 'evt-6',
      },
    );
    expect(envelope).toMatchObject({ eventId: '01JEVENT00000000000000000A', correlationId: 'req-7', causationId: 'evt-6' });
  });
});

describe('traceparent', () => {
  it('starts a trace and continues one with a new span id', () => {
    const root = newTraceparent();
    expect(isTraceparent(root)).toBe(true);
    const child = childTraceparent(root);
    expect(child.slice(0, 36)).toBe(root.slice(0, 36));
    expect(child.slice(36, 52)).not.toBe(root.slice(36, 52));
    expect(isTraceparent(childTraceparent('garbage'))).toBe(true);
    expect(isTraceparent(`00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`)).toBe(false);
  });
});
