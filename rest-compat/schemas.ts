import { idPattern, type IdKind } from '../platform/ids.js';
import type { JsonSchema } from './validation.js';

/**
 * JSON Schemas (2020-12) of the REST requests. Every object is closed (additionalProperties:
 * false), so an unknown or misspelt field is a 400 naming it rather than silently ignored.
 */
export const id = (kind: IdKind): JsonSchema => ({ type: 'string', pattern: idPattern(kind) });

/** BCP-47 shape (language, then subtags), as Accept-Language and the course locale maps use it. */
export const LOCALE_PATTERN = '^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$';
export const locale: JsonSchema = { type: 'string', pattern: LOCALE_PATTERN, maxLength: 35 };

const text = (maxLength: number): JsonSchema => ({ type: 'string', minLength: 1, maxLength });

export const localeMap: JsonSchema = {
  type: 'object',
  minProperties: 1,
  maxProperties: 100,
  propertyNames: { pattern: LOCALE_PATTERN, maxLength: 35 },
  additionalProperties: text(20_000),
};

export const closed = (properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema => ({
  type: 'object',
  additionalProperties: false,
  properties,
  ...(required.length ? { required } : {}),
});

const target = closed({ provider: { type: 'string', pattern: '^[a-z][a-z0-9_-]{0,63}$' }, model: text(200) }, [
  'provider',
  'model',
]);

export const FEATURE_KEY_PATTERN = '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$';
const featureKey: JsonSchema = { type: 'string', pattern: FEATURE_KEY_PATTERN, maxLength: 100 };
const residency: JsonSchema = { type: 'string', pattern: '^[A-Z][A-Z0-9_]{1,31}$' };

export const courseIdParams = closed({ courseId: id('course') }, ['courseId']);
export const provenanceIdParams = closed({ provenanceId: id('provenance') }, ['provenanceId']);

export const coursesQuery = closed({
  cursor: { type: 'string', minLength: 1, maxLength: 512 },
  limit: { type: 'integer', minimum: 1, maximum: 100 },
});

export const emptyQuery = closed({});

export const updateCourseMetadataBody: JsonSchema = {
  ...closed({
    title: localeMap,
    description: localeMap,
    defaultLocale: locale,
    tags: { type: 'array', maxItems: 100, uniqueItems: true, items: text(100) },
    cover: closed({ assetId: id('mediaAsset') }, ['assetId']),
    authors: {
      type: 'array',
      maxItems: 100,
      items: closed({ userId: id('user'), role: text(50), displayName: text(200) }, ['userId', 'role', 'displayName']),
    },
    taxonomy: {
      type: 'array',
      maxItems: 100,
      items: closed({ taxonomyId: id('taxonomy'), nodePath: text(500) }, ['taxonomyId', 'nodePath']),
    },
  }),
  minProperties: 1,
};

export const assistBody = closed(
  {
    featureKey,
    // Values are whatever the template renders; unknown names are ignored and missing ones are
    // refused by the AI subgraph, which knows the template.
    variables: { type: 'object', maxProperties: 200, propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 100 } },
    context: closed({ facilityId: text(200), specialty: text(200), subjectRef: text(200) }, ['facilityId', 'specialty']),
    locale,
    residency,
    mode: { enum: ['live', 'shadow'] },
  },
  ['featureKey', 'variables', 'context'],
);

export const createRoutingRuleBody = closed(
  { featureKey, residency, primary: target, fallbacks: { type: 'array', maxItems: 10, items: target } },
  ['primary', 'fallbacks'],
);

export const replayDeadLettersBody = closed({
  subject: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_.*>-]+$' },
  eventType: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[a-z0-9_.]+$' },
  from: { type: 'string', format: 'date-time' },
  to: { type: 'string', format: 'date-time' },
  eventIds: { type: 'array', minItems: 1, maxItems: 1000, uniqueItems: true, items: text(100) },
  maxCount: { type: 'integer', minimum: 1, maximum: 10_000 },
  dryRun: { type: 'boolean' },
});
