import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERASED_USER_ID, ID_PREFIXES, idPattern, newId, type IdKind } from '../../../platform/ids.js';
import { canonicalHash } from '../../../platform/text/canonical-json.js';
import { isSchemaObject, mapSchema, type JsonSchema } from '../../../events/schemas/schema-walk.logic.js';
import { createSchemaRegistry, loadSchemaRegistry, readReleasedFile, readSchemaFiles } from '../../../events/schemas/registry.js';
import { coursePublishedPayload, courseRegisteredPayload, playPackageBuiltPayload } from './fixtures.js';

const registry = loadSchemaRegistry();
const validationError = (fn: () => void) => {
  try {
    fn();
  } catch (error) {
    return error as { code: string; details: { path: string; message: string } };
  }
  throw new Error('expected a validation error');
};

describe('schema registry', () => {
  it('holds every published and consumed event type at v1', () => {
    expect(registry.names().sort()).toEqual([
      'ai.review.completed',
      'audit.ai.event',
      'authoring.course_draft.published',
      'catalog.course.archived',
      'catalog.course.metadata_updated',
      'catalog.course.registered',
      'catalog.course.visibility_changed',
      'catalog.course_version.deprecated',
      'catalog.course_version.published',
      'catalog.course_version.redacted',
      'catalog.course_version.withdrawn',
      'catalog.taxonomy.updated',
      'content.play_package.built',
      'gdpr.subject_request.received',
    ]);
    expect(registry.versions('catalog.course_version.published')).toEqual([1]);
    expect(registry.versions('catalog.nothing.here')).toEqual([]);
  });

  it('builds schemaUri from the $id and the digest of the canonical schema', () => {
    const uri = registry.schemaUri('catalog.course_version.published', 1);
    const schema = registry.schema('catalog.course_version.published', 1);
    expect(schema.$id).toBe('schemas://catalog/course_version/published/v1');
    expect(uri).toBe(`schemas://catalog/course_version/published/v1#sha256-${canonicalHash(schema)}`);
    expect(uri).toMatch(/^schemas:\/\/catalog\/course_version\/published\/v1#sha256-[0-9a-f]{64}$/);
  });

  it('declares course_version.published required and optional members exactly as the spec', () => {
    const schema = registry.schema('catalog.course_version.published', 1) as {
      required: string[];
      properties: Record<string, unknown>;
    };
    expect([...schema.required].sort()).toEqual([
      'courseId',
      'courseVersionId',
      'durationMinutes',
      'locales',
      'playPackage',
      'publishedBy',
      'versionLabel',
    ]);
    expect(
      Object.keys(schema.properties)
        .filter((p) => !schema.required.includes(p))
        .sort(),
    ).toEqual(['becameLatest', 'changelog', 'estimatedReadingMinutes', 'moduleSummaries']);
  });

  it('accepts valid payloads', () => {
    expect(() => registry.validate('catalog.course_version.published', 1, coursePublishedPayload())).not.toThrow();
    expect(() =>
      registry.validate(
        'catalog.course_version.published',
        1,
        coursePublishedPayload({
          estimatedReadingMinutes: 0,
          becameLatest: true,
          changelog: { en: 'Fixes' },
          moduleSummaries: [{ id: 'm1', title: { en: 'Intro' }, lessonCount: 3, durationMinutes: 20, hasAssessments: false }],
        }),
      ),
    ).not.toThrow();
    expect(() => registry.validate('catalog.course.registered', 1, courseRegisteredPayload())).not.toThrow();
  });

  it.each([
    ['versionLabel', { versionLabel: '01.2.3' }, '/versionLabel', 'must match pattern'],
    [
      'sha256',
      { playPackage: { playPackageId: newId('playPackage'), sha256: 'A'.repeat(64), format: 'v1' } },
      '/playPackage/sha256',
      'must match pattern',
    ],
    [
      'format',
      { playPackage: { playPackageId: newId('playPackage'), sha256: 'a'.repeat(64), format: 'v3' } },
      '/playPackage/format',
      'must be equal to one of the allowed values',
    ],
    ['durationMinutes', { durationMinutes: -1 }, '/durationMinutes', 'must be >= 0'],
    ['integer minutes', { durationMinutes: 1.5 }, '/durationMinutes', 'must be integer'],
    ['locales', { locales: [] }, '/locales', 'must NOT have fewer than 1 items'],
    ['id alphabet', { courseId: 'crs_0000000000000000000000000U' }, '/courseId', 'must match pattern'],
    ['id prefix', { courseId: newId('courseVersion') }, '/courseId', 'must match pattern'],
    ['required', { playPackage: undefined }, '/playPackage', "must have required property 'playPackage'"],
    ['undeclared member', { colour: 'red' }, '/colour', 'must NOT have additional properties'],
  ])('rejects a bad %s with the failing path', (_name, overrides, path, message) => {
    const payload = JSON.parse(JSON.stringify(coursePublishedPayload(overrides)));
    const error = validationError(() => registry.validate('catalog.course_version.published', 1, payload));
    expect(error.code).toBe('schema.invalid_event');
    expect(error.details).toEqual({ path, message: expect.stringContaining(message) });
  });

  it('requires a reason on course_version.withdrawn', () => {
    const payload = { courseVersionId: newId('courseVersion'), courseId: newId('course'), affectedEnrollmentsApprox: 12 };
    expect(validationError(() => registry.validate('catalog.course_version.withdrawn', 1, payload)).details.path).toBe('/reason');
    expect(() =>
      registry.validate('catalog.course_version.withdrawn', 1, { ...payload, reason: 'licence expired' }),
    ).not.toThrow();
  });

  it('takes course_version.redacted with the new value of each redacted field, and never an empty list', () => {
    const payload = {
      courseVersionId: newId('courseVersion'),
      courseId: newId('course'),
      redactedFields: ['publishedBy'],
      publishedBy: ERASED_USER_ID,
    };
    expect(() => registry.validate('catalog.course_version.redacted', 1, payload)).not.toThrow();
    expect(
      validationError(() => registry.validate('catalog.course_version.redacted', 1, { ...payload, redactedFields: [] })).details
        .path,
    ).toBe('/redactedFields');
    const { publishedBy: _withheld, ...withoutValue } = payload;
    expect(
      validationError(() => registry.validate('catalog.course_version.redacted', 1, withoutValue)).details.message,
    ).toContain('publishedBy');
  });

  it('lets consumers through unknown enum values but stays strict on required members and types', () => {
    const tenantId = newId('tenant');
    const widened = playPackageBuiltPayload(tenantId, {
      playPackage: { playPackageId: newId('playPackage'), sha256: 'a'.repeat(64), format: 'v9' },
    });
    expect(() => registry.validate('content.play_package.built', 1, widened, 'consume')).not.toThrow();
    expect(() => registry.validate('content.play_package.built', 1, widened, 'produce')).toThrow();
    const gdpr = { requestId: 'r-1', tenantId, subjectType: 'device', subjectId: 'x', requestType: 'restriction' };
    expect(() => registry.validate('gdpr.subject_request.received', 1, gdpr, 'consume')).not.toThrow();
    expect(
      validationError(() => registry.validate('gdpr.subject_request.received', 1, { ...gdpr, requestType: 7 }, 'consume')).details
        .path,
    ).toBe('/requestType');
    const { tenantId: _missing, ...withoutTenant } = playPackageBuiltPayload(tenantId);
    expect(validationError(() => registry.validate('content.play_package.built', 1, withoutTenant, 'consume')).details.path).toBe(
      '/tenantId',
    );
    // Consumers accept members they do not know (a minor change upstream); producers may not send them.
    expect(() =>
      registry.validate('content.play_package.built', 1, { ...playPackageBuiltPayload(tenantId), extra: 1 }, 'consume'),
    ).not.toThrow();
  });

  it('validates every audit.ai.<action> event with the audit.ai.event schema', () => {
    expect(registry.schemaName('audit.ai.routing_rule_changed')).toBe('audit.ai.event');
    expect(registry.schemaUri('audit.ai.routing_rule_changed', 1)).toMatch(/^schemas:\/\/audit\/ai\/event\/v1#sha256-/);
    expect(() =>
      registry.validate('audit.ai.prompt_template_published', 1, {
        action: 'prompt_template_published',
        actor: { type: 'user', id: 'u' },
        details: { hash: 'x' },
      }),
    ).not.toThrow();
    expect(registry.schemaName('audit.ai.Bad-Name')).toBeUndefined();
  });

  it('refuses unknown event types and versions with a stable code', () => {
    expect(() => registry.validate('catalog.course_version.published', 2, {})).toThrow(
      expect.objectContaining({ code: 'schema.unknown_event' }),
    );
    expect(() => registry.schemaUri('catalog.unknown.thing', 1)).toThrow(
      expect.objectContaining({ code: 'schema.unknown_event' }),
    );
  });

  it('uses the platform id patterns for every id member', () => {
    const kindOf: Record<string, IdKind> = {
      courseId: 'course',
      courseVersionId: 'courseVersion',
      userId: 'user',
      publishedBy: 'user',
      playPackageId: 'playPackage',
      taxonomyId: 'taxonomy',
      courseDraftId: 'courseDraft',
      sourceDraftId: 'courseDraft',
      tenantId: 'tenant',
      assetId: 'mediaAsset',
      provenanceId: 'provenance',
      taskId: 'reviewTask',
      queueId: 'reviewQueue',
    };
    const prefixes = Object.values(ID_PREFIXES).join('|');
    let checked = 0;
    for (const file of readSchemaFiles()) {
      mapSchema(file.schema, (node) => {
        for (const [name, sub] of Object.entries(isSchemaObject(node.properties) ? node.properties : {})) {
          const pattern = (sub as JsonSchema).pattern;
          if (typeof pattern === 'string' && new RegExp(`^\\^(${prefixes})_`).test(pattern)) {
            expect(kindOf[name], `${file.name}: ${name}`).toBeDefined();
            expect(pattern, `${file.name}: ${name}`).toBe(idPattern(kindOf[name]));
            checked++;
          } else if (kindOf[name]) {
            throw new Error(`${file.name}: ${name} has no id pattern`);
          }
        }
        return node;
      });
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('keeps released.json in step with the files (schemas:check would fail otherwise)', () => {
    const released = readReleasedFile().schemas;
    const files = readSchemaFiles();
    expect(released.map((r) => `${r.eventType}@${r.version}`).sort()).toEqual(files.map((f) => `${f.name}@${f.version}`).sort());
    for (const entry of released) expect(entry.digest).toBe(canonicalHash(files.find((f) => f.name === entry.eventType)!.schema));
    expect(registry.info('catalog.course.registered')).toEqual({
      eventType: 'catalog.course.registered',
      versions: [{ version: 1, releasedAt: '2026-03-31T00:00:00.000Z' }],
    });
  });

  it('validates the envelope shape', () => {
    const reg = createSchemaRegistry([]);
    const error = validationError(() => reg.validateEnvelope({ eventId: '01J', eventType: 'catalog.course.registered' }));
    expect(error).toMatchObject({ code: 'schema.invalid_event', details: { path: '/eventVersion' } });
  });

  it('refuses a schema file whose $id does not match its path, and a duplicated version', () => {
    const schema = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'schemas-'));
    fs.mkdirSync(path.join(dir, 'x/y/z'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'x/y/z/v1.json'), JSON.stringify({ ...schema, $id: 'schemas://x/y/other/v1' }));
    expect(() => readSchemaFiles(dir)).toThrow(/has \$id schemas:\/\/x\/y\/other\/v1, expected schemas:\/\/x\/y\/z\/v1/);
    fs.rmSync(dir, { recursive: true });
    expect(() =>
      createSchemaRegistry([
        { name: 'x.y.z', version: 1, schema },
        { name: 'x.y.z', version: 1, schema },
      ]),
    ).toThrow(/registered twice/);
  });
});
