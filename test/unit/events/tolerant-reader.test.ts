import { describe, expect, it } from 'vitest';
import { newId } from '../../../platform/ids.js';
import { buildEnvelope } from '../../../events/envelope.js';
import { manualClock } from '../../../platform/clock.js';
import { completeEnvelope } from '../../../events/publish/publish.logic.js';
import { breakingChanges } from '../../../events/schemas/compat.logic.js';
import { isReaderCopy, loadSchemaRegistry, type SchemaRegistry } from '../../../events/schemas/registry.js';
import { readSchemaUri } from '../../../events/schemas/schema-uri.logic.js';
import type { JsonSchema } from '../../../events/schemas/schema-walk.logic.js';
import { playPackageBuiltPayload } from './fixtures.js';

const registry: SchemaRegistry = loadSchemaRegistry();
const BUILT_ID = 'schemas://content/play_package/built/v1';
const digest = registry.digest('content.play_package.built', 1);

describe('schemaUri of a consumed event', () => {
  it('is read with or without the digest fragment; only naming another schema is an error', () => {
    const ours = { id: BUILT_ID, digest };
    expect(readSchemaUri(undefined, ours)).toEqual({ kind: 'absent' });
    expect(readSchemaUri(BUILT_ID, ours)).toEqual({ kind: 'no_digest' });
    expect(readSchemaUri(`${BUILT_ID}#sha256-${digest}`, ours)).toEqual({ kind: 'same_digest' });
    expect(readSchemaUri(`${BUILT_ID}#sha256-${'0'.repeat(64)}`, ours)).toEqual({
      kind: 'digest_differs',
      digest: '0'.repeat(64),
    });
    expect(readSchemaUri('schemas://content/play_package/built/v2', ours)).toEqual({
      kind: 'other_schema',
      id: 'schemas://content/play_package/built/v2',
    });
    expect(readSchemaUri('https://example.org/schema', ours).kind).toBe('other_schema');
    expect(readSchemaUri(`${BUILT_ID}#md5-abc`, ours).kind).toBe('other_schema');
  });

  it('a consumed envelope needs only what handlers use; a produced one needs every member', () => {
    const tenantId = newId('tenant');
    const full = buildEnvelope(
      {
        clock: manualClock(new Date('2026-11-21T10:00:00.000Z')),
        registry,
        source: { service: 'content', instance: 'i', commit: 'c' },
      },
      {
        eventType: 'content.play_package.built',
        eventVersion: 1,
        payload: playPackageBuiltPayload(tenantId),
        tenantId,
        partitionKey: 'p',
        actor: { type: 'system', id: 'content' },
        retentionClass: 'operational',
        dataResidency: 'EU',
      },
    );
    const { eventId, eventType, eventVersion, occurredAt, payload } = full;
    const bare = { eventId, eventType, eventVersion, tenantId, occurredAt, payload };
    expect(registry.readConsumedEnvelope(bare)).toEqual({ envelope: bare, schemaUri: { kind: 'absent' } });
    expect(() => registry.validateEnvelope(bare)).toThrow(/required property/);
    expect(() => registry.readConsumedEnvelope({ ...bare, occurredAt: undefined })).toThrow(/occurredAt/);
    // Present members keep their types.
    expect(() => registry.readConsumedEnvelope({ ...bare, actor: 'content' })).toThrow(/actor/);
    expect(registry.readConsumedEnvelope({ ...full, schemaUri: BUILT_ID }).schemaUri).toEqual({ kind: 'no_digest' });
    expect(() => registry.readConsumedEnvelope({ ...full, schemaUri: 'schemas://catalog/course/registered/v1' })).toThrow(
      /schemaUri names schemas:\/\/catalog\/course\/registered\/v1/,
    );
  });
});

describe("reader's copies of other services' schemas", () => {
  const built = registry.schema('content.play_package.built', 1);

  it('are the schemas of the domains this service does not produce', () => {
    expect(
      ['content.play_package.built', 'authoring.course_draft.published', 'gdpr.subject_request.received'].map(isReaderCopy),
    ).toEqual([true, true, true]);
    expect(['catalog.course.registered', 'audit.ai.event', 'ai.review.completed'].map(isReaderCopy)).toEqual([
      false,
      false,
      false,
    ]);
  });

  it('may loosen a required field (accepting more of what the producer sends) but not tighten', () => {
    const required = [...(built.required as string[]), 'publishedBy'];
    const strict = { ...built, required } as JsonSchema;
    // Our released copy required publishedBy; the current one does not.
    expect(breakingChanges(strict, built, { readerCopy: true })).toEqual([]);
    expect(breakingChanges(strict, built).map((c) => c.kind)).toEqual(['required_changed']);
    expect(breakingChanges(built, strict, { readerCopy: true }).map((c) => `${c.kind} ${c.path}`)).toEqual([
      'required_changed /publishedBy',
    ]);
  });
});

describe('events:publish envelope completion', () => {
  const deps = {
    registry,
    now: new Date('2026-11-21T10:00:00.000Z'),
    newId: () => '01JDGZ00000000000000000000',
    source: { service: 'events-publish', instance: 'host', commit: 'dev' },
  };
  const tenantId = newId('tenant');
  const draft = {
    eventType: 'content.play_package.built',
    tenantId,
    actor: { type: 'system', id: 'content-svc' },
    partitionKey: 'drf_1',
    retentionClass: 'operational',
    dataResidency: 'EU',
    payload: playPackageBuiltPayload(tenantId),
  };

  it('fills in the id, timestamps, schemaUri with our digest, correlation and source; keeps what is given', () => {
    const envelope = completeEnvelope(draft, deps);
    expect(envelope).toEqual({
      ...draft,
      eventId: '01JDGZ00000000000000000000',
      eventVersion: 1,
      schemaUri: `${BUILT_ID}#sha256-${digest}`,
      source: deps.source,
      occurredAt: '2026-11-21T10:00:00.000Z',
      ingestedAt: '2026-11-21T10:00:00.000Z',
      correlationId: '01JDGZ00000000000000000000',
      causationId: '01JDGZ00000000000000000000',
    });
    registry.validateEnvelope(envelope);
    expect(completeEnvelope({ ...draft, eventId: 'fixed-1', occurredAt: '2026-01-01T00:00:00.000Z' }, deps)).toMatchObject({
      eventId: 'fixed-1',
      occurredAt: '2026-01-01T00:00:00.000Z',
      correlationId: 'fixed-1',
    });
  });

  it('names what is missing or invalid', () => {
    expect(() => completeEnvelope([], deps)).toThrow(/one JSON object/);
    expect(() => completeEnvelope({ ...draft, actor: undefined, dataResidency: undefined }, deps)).toThrow(
      /needs actor, dataResidency/,
    );
    expect(() => completeEnvelope({ ...draft, eventType: 'content.nothing.happened' }, deps)).toThrow(/no schema is registered/);
    expect(() => completeEnvelope({ ...draft, payload: { ...draft.payload, versionLabel: 'one' } }, deps)).toThrow(
      /versionLabel/,
    );
  });
});
