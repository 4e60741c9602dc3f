import { describe, expect, it } from 'vitest';
import { loadSchemaRegistry } from '../../../events/schemas/registry.js';
import { PLAY_PACKAGE_FORMATS } from '../../../subgraphs/catalog/course-version/play-package.logic.js';
import { decideGdprRequest, NOT_APPLIED_REASONS } from '../../../subgraphs/catalog/gdpr/gdpr-request.logic.js';
import { readEnumValue } from '../../../subgraphs/shared/enum-value.logic.js';

describe('reading a consumed enum value (enum widening is minor: unknown values are tolerated)', () => {
  it('tells a known value, an unknown one and one that cannot be an enum value apart', () => {
    expect(readEnumValue('v2', ['v1', 'v2'])).toBe('known');
    expect(readEnumValue('v3', ['v1', 'v2'])).toBe('unknown');
    expect(readEnumValue('restriction', ['access'])).toBe('unknown');
    expect(readEnumValue('x-vendor.format:2', [])).toBe('unknown');
    for (const invalid of ['', ' v3', 'v3 ', 'v 3', '-v3', 'v3\n', 'x'.repeat(65), 3, null, undefined, {}, ['v1']]) {
      expect(readEnumValue(invalid, ['v1', 'v2']), JSON.stringify(invalid)).toBe('invalid');
    }
    expect(readEnumValue('x'.repeat(64), [])).toBe('unknown');
  });
});

describe('what the catalog does with a GDPR request', () => {
  const user = { subjectType: 'user', subjectIsUserId: true };

  it('applies the request types it knows to user subjects', () => {
    for (const requestType of ['access', 'rectification', 'erasure'])
      expect(decideGdprRequest({ ...user, requestType })).toEqual({ kind: 'apply', requestType });
  });

  it('records an unknown request type instead of dead-lettering it, and dead-letters one that is no enum value', () => {
    expect(decideGdprRequest({ ...user, requestType: 'restriction' })).toEqual({
      kind: 'not_applied',
      reason: 'unknown_request_type',
    });
    expect(decideGdprRequest({ ...user, requestType: '' })).toMatchObject({ kind: 'invalid' });
    expect(decideGdprRequest({ ...user, requestType: 7 })).toMatchObject({ kind: 'invalid' });
    expect(decideGdprRequest({ subjectType: 'organisation', subjectIsUserId: false, requestType: '' })).toMatchObject({
      kind: 'invalid',
    });
  });

  it('records subjects the catalog holds nothing of', () => {
    expect(decideGdprRequest({ subjectType: 'organisation', subjectIsUserId: false, requestType: 'erasure' })).toEqual({
      kind: 'not_applied',
      reason: 'subject_type_not_held',
    });
    expect(decideGdprRequest({ subjectType: 'user', subjectIsUserId: false, requestType: 'erasure' })).toEqual({
      kind: 'not_applied',
      reason: 'subject_not_a_user_id',
    });
    expect(NOT_APPLIED_REASONS).toEqual(['unknown_request_type', 'subject_type_not_held', 'subject_not_a_user_id']);
  });
});

describe('play package formats', () => {
  it('are exactly the formats our published course_version.published v1 schema allows (the spec: v1, v2)', () => {
    const schema = loadSchemaRegistry().schema('catalog.course_version.published', 1) as {
      properties: { playPackage: { $ref: string } };
      $defs: { playPackage: { properties: { format: { enum: string[] } } } };
    };
    expect(schema.properties.playPackage.$ref).toBe('#/$defs/playPackage');
    expect([...PLAY_PACKAGE_FORMATS]).toEqual(schema.$defs.playPackage.properties.format.enum);
    expect([...PLAY_PACKAGE_FORMATS]).toEqual(['v1', 'v2']);
  });
});
