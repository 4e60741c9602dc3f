import { describe, expect, it } from 'vitest';
import { loadSystemConfig } from '../../../processes/config.js';
import { canonicalHash } from '../../../platform/text/canonical-json.js';
import { checkReleased, formatCheck, releaseCurrent } from '../../../events/schemas/release.logic.js';
import type { ReleasedEntry, SchemaFile } from '../../../events/schemas/registry.js';
import { consumerSchema, producerSchema } from '../../../events/schemas/schema-modes.logic.js';
import { deadLetterSubjectPrefix, streamSpecs } from '../../../events/streams.js';

const schemaV1 = { type: 'object', required: ['a'], properties: { a: { type: 'string' }, b: { type: 'integer' } } };
const file = (name: string, version: number, schema: object): SchemaFile => ({
  name,
  version,
  schema: schema as SchemaFile['schema'],
});
const entry = (name: string, version: number, schema: object, releasedAt = '2026-03-31T00:00:00.000Z'): ReleasedEntry => ({
  eventType: name,
  version,
  releasedAt,
  digest: canonicalHash(schema),
  schema: schema as ReleasedEntry['schema'],
});

describe('released schema set', () => {
  it('passes unchanged versions and lists new ones as unreleased', () => {
    const check = checkReleased([entry('x.y.z', 1, schemaV1)], [file('x.y.z', 1, schemaV1), file('x.y.z', 2, schemaV1)]);
    expect(check).toEqual({ breaking: [], compatible: [], unreleased: [{ eventType: 'x.y.z', version: 2 }] });
  });

  it('fails a released version changed incompatibly, with a readable list', () => {
    const changed = { ...schemaV1, required: ['a', 'b'] };
    const check = checkReleased([entry('x.y.z', 1, schemaV1)], [file('x.y.z', 1, changed)]);
    expect(check.breaking).toEqual([
      {
        eventType: 'x.y.z',
        version: 1,
        changes: [{ kind: 'required_changed', path: '/b', message: 'changed from optional to required' }],
      },
    ]);
    expect(formatCheck(check)).toBe(
      'BREAKING x.y.z v1: a released version changed incompatibly; add v2 instead\n  - required_changed at /b: changed from optional to required',
    );
    expect(() => releaseCurrent([entry('x.y.z', 1, schemaV1)], [file('x.y.z', 1, changed)], new Date())).toThrow(
      /BREAKING x.y.z v1/,
    );
  });

  it('fails a removed released version and a hand-edited released.json', () => {
    expect(checkReleased([entry('x.y.z', 1, schemaV1)], []).breaking[0].changes[0].kind).toBe('version_removed');
    const tampered = { ...entry('x.y.z', 1, schemaV1), digest: '0'.repeat(64) };
    expect(checkReleased([tampered], [file('x.y.z', 1, schemaV1)]).breaking[0].changes[0].message).toMatch(/edited/);
  });

  it('records compatible changes and new versions, keeping release dates', () => {
    const widened = { ...schemaV1, properties: { ...schemaV1.properties, c: { type: 'boolean' } } };
    const current = [file('x.y.z', 1, widened), file('x.y.z', 2, schemaV1)];
    expect(checkReleased([entry('x.y.z', 1, schemaV1)], current).compatible).toEqual([{ eventType: 'x.y.z', version: 1 }]);
    const next = releaseCurrent([entry('x.y.z', 1, schemaV1)], current, new Date('2026-11-21T00:00:00.000Z'));
    expect(next.map((e) => [e.version, e.releasedAt, e.digest])).toEqual([
      [1, '2026-03-31T00:00:00.000Z', canonicalHash(widened)],
      [2, '2026-11-21T00:00:00.000Z', canonicalHash(schemaV1)],
    ]);
  });
});

describe('producer and consumer readings of a schema', () => {
  const schema = {
    type: 'object',
    properties: {
      kind: { enum: ['a', 'b'] },
      nested: { type: 'object', properties: { format: { type: 'string', const: 'v1' } } },
      map: { type: 'object', additionalProperties: { type: 'string' } },
    },
  };

  it('producer closes objects that declare properties and leaves maps alone', () => {
    const produced = producerSchema(schema) as {
      additionalProperties: boolean;
      properties: Record<string, { additionalProperties?: unknown }>;
    };
    expect(produced.additionalProperties).toBe(false);
    expect(produced.properties.nested.additionalProperties).toBe(false);
    expect(produced.properties.map.additionalProperties).toEqual({ type: 'string' });
  });

  it('consumer widens enums and consts to their base type', () => {
    const consumed = consumerSchema(schema) as { properties: Record<string, Record<string, unknown>> };
    expect(consumed.properties.kind).toEqual({ type: 'string' });
    expect((consumed.properties.nested.properties as Record<string, unknown>).format).toEqual({ type: 'string' });
    expect(schema.properties.kind).toEqual({ enum: ['a', 'b'] });
  });
});

describe('streams', () => {
  it('declares the spec streams with design §4 names and subjects', () => {
    const config = loadSystemConfig({});
    const specs = streamSpecs(config.events);
    const day = 24 * 60 * 60 * 1000;
    expect(specs.map((s) => [s.name, s.subjects, s.maxAgeMs / day, s.storage])).toEqual([
      ['CATALOG', ['catalog.>'], 30, 'file'],
      ['CATALOG_DLQ', ['CATALOG.dlq.>'], 90, 'file'],
      ['AUDIT', ['audit.>'], 30, 'file'],
      ['AI', ['ai.>'], 30, 'file'],
      ['CONTENT', ['content.>'], 30, 'file'],
      ['AUTHORING', ['authoring.>'], 30, 'file'],
      ['GDPR', ['gdpr.>'], 30, 'file'],
    ]);
    expect(deadLetterSubjectPrefix(config.events)).toBe('CATALOG.dlq');
    expect(streamSpecs(config.events, { subjectPrefix: 't1.', replicas: 3 })[1]).toMatchObject({
      subjects: ['t1.CATALOG.dlq.>'],
      replicas: 3,
    });
  });
});
