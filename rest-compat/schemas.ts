import { idPattern, type IdKind } from '../platform/ids.js';
import type { JsonSchema } from './validation.js';

/**
 * JSON Schemas (2020-12) of the REST requests and answers; the OpenAPI document publishes them as
 * they are. Every object is closed (additionalProperties: false): an unknown or misspelt request
 * field is a 400 naming it rather than silently ignored, and an answer has exactly its documented
 * members.
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
export const routingRuleIdParams = closed({ ruleId: id('routingRule') }, ['ruleId']);

export const coursesQuery = closed({
  cursor: { type: 'string', minLength: 1, maxLength: 512 },
  limit: { type: 'integer', minimum: 1, maximum: 100 },
});

export const emptyQuery = closed({});

const coverBody = closed({ assetId: id('mediaAsset') }, ['assetId']);

const metadataBodyMembers: Record<string, JsonSchema> = {
  defaultLocale: locale,
  tags: { type: 'array', maxItems: 100, uniqueItems: true, items: text(100) },
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
};

/** `application/json`: each member given replaces the course's member whole (a locale map included). */
export const updateCourseMetadataBody: JsonSchema = {
  ...closed({ title: localeMap, description: localeMap, cover: coverBody, ...metadataBodyMembers }),
  minProperties: 1,
};

/** A locale map in a merge patch: a text sets the locale, null removes it, unnamed locales stay. */
const localeMapPatch: JsonSchema = {
  type: 'object',
  maxProperties: 100,
  propertyNames: { pattern: LOCALE_PATTERN, maxLength: 35 },
  additionalProperties: { anyOf: [text(20_000), { type: 'null' }] },
};

/**
 * `application/merge-patch+json` (RFC 7396): locale maps merge, `cover: null` removes the cover,
 * arrays and strings replace. Null is refused for members a course cannot be without.
 */
export const mergePatchCourseMetadataBody: JsonSchema = {
  ...closed({
    title: localeMapPatch,
    description: localeMapPatch,
    cover: { anyOf: [coverBody, { type: 'null' }] },
    ...metadataBodyMembers,
  }),
  minProperties: 1,
};

/**
 * A template variable's value as the AI subgraph renders it (templates/template.logic.ts): a string
 * as it is, a number or boolean printed, an object or array as its JSON; null counts as missing.
 */
const templateValue: JsonSchema = {
  anyOf: [
    { type: 'string' },
    { type: 'number' },
    { type: 'boolean' },
    { type: 'object', additionalProperties: true },
    { type: 'array' },
    { type: 'null' },
  ],
};

export const assistBody = closed(
  {
    featureKey,
    // Unknown names are ignored and missing ones are refused by the AI subgraph, which knows the
    // template. The values are typed (not a bare `type: object`, which generated clients type as an
    // object without members): what the template renders, and `__mock` (an object).
    variables: {
      type: 'object',
      maxProperties: 200,
      propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 100 },
      additionalProperties: templateValue,
      description:
        'Template variables by name. Unknown names are ignored; a missing one (or null) is 400 BAD_USER_INPUT. Names starting with `__` are gateway directives (`__mock` drives the mock provider when fault injection is on).',
    },
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

/** PUT /v1/admin/quota: the settings replaced whole (0 = no limit). */
export const quotaSettingsBody = closed(
  {
    enabled: { type: 'boolean' },
    requestsPerMinute: { type: 'integer', minimum: 0, maximum: 1_000_000 },
    tokensPerDay: { type: 'integer', minimum: 0, maximum: 2_000_000_000 },
  },
  ['enabled', 'requestsPerMinute', 'tokensPerDay'],
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

// ------------------------------------------------------------------ answers

const string: JsonSchema = { type: 'string' };
const integer: JsonSchema = { type: 'integer' };
const dateTime: JsonSchema = { type: 'string', format: 'date-time' };
/** A member that may be null; unions of a scalar type stay one `type` list. */
const orNull = (schema: JsonSchema): JsonSchema =>
  typeof schema.type === 'string' && schema.type !== 'object' && schema.type !== 'array'
    ? { ...schema, type: [schema.type, 'null'] }
    : { anyOf: [schema, { type: 'null' }] };
/** A closed object whose every member is present (null where the value is absent). */
const record = (properties: Record<string, JsonSchema>): JsonSchema => closed(properties, Object.keys(properties));

const localeText: JsonSchema = { type: 'object', propertyNames: { pattern: LOCALE_PATTERN }, additionalProperties: string };
const localized = record({ locale, text: string });

/** A course as the REST door answers it: the spec's fields plus the locale resolved for Accept-Language. */
export const course = record({
  courseId: id('course'),
  slug: string,
  title: localeText,
  description: localeText,
  defaultLocale: locale,
  visibility: string,
  authors: { type: 'array', items: record({ userId: string, role: string, displayName: string }) },
  taxonomy: { type: 'array', items: record({ taxonomyId: string, nodePath: string }) },
  tags: { type: 'array', items: string },
  cover: orNull(record({ assetId: string })),
  etag: string,
  sourceDraftId: orNull(string),
  localizedTitle: orNull(localized),
  localizedDescription: orNull(localized),
});

export const coursesPage = record({
  items: { type: 'array', maxItems: 100, items: course },
  nextCursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last page.' },
});

/** The answer of POST /v1/ai/assist for one status (`completed` 200, `pending_review` 202). */
const assistResult = (status: 'completed' | 'pending_review'): JsonSchema =>
  record({
    provenanceId: id('provenance'),
    status: { const: status },
    mode: { enum: ['live', 'shadow'] },
    text: orNull(string),
    provider: orNull(string),
    model: orNull(string),
    reviewState: orNull(string),
    outputHash: orNull(string),
    template: orNull(record({ templateId: string, version: integer, hash: string })),
    timings: record({ totalMs: integer, providerMs: orNull(integer), queueMs: orNull(integer) }),
  });

export const assistCompleted = assistResult('completed');
export const assistPendingReview = assistResult('pending_review');

export const provenance = record({
  provenanceId: id('provenance'),
  tenantId: id('tenant'),
  actorType: string,
  actorId: string,
  featureKey: string,
  status: string,
  mode: string,
  templateId: orNull(string),
  templateVersion: orNull(integer),
  templateHash: orNull(string),
  renderedPromptHash: orNull(string),
  ruleId: orNull(string),
  ruleVersion: orNull(integer),
  provider: orNull(string),
  model: orNull(string),
  attempts: {
    type: 'array',
    items: record({ provider: string, model: string, outcome: string, latencyMs: integer, errorCode: orNull(string) }),
  },
  outputHash: orNull(string),
  moderation: { description: 'The moderation verdict as recorded (any JSON value), null when none ran.' },
  reviewState: orNull(string),
  review: orNull({ type: 'object', additionalProperties: true, description: 'The review decision as recorded, null before one' }),
  facilityId: orNull(string),
  specialty: orNull(string),
  subjectRef: orNull(string),
  residency: orNull(string),
  legacyBackfill: { type: 'boolean' },
  errorCode: orNull(string),
  latencyMs: orNull(integer),
  createdAt: dateTime,
  completedAt: orNull(dateTime),
});

const providerTarget = record({ provider: string, model: string });

/** A routing rule with its versions; `version` repeats `activeVersion` (the version now in force). */
export const routingRule = record({
  ruleId: id('routingRule'),
  version: orNull(integer),
  tenantId: { type: ['string', 'null'], description: 'null for a global rule' },
  featureKey: orNull(string),
  residency: orNull(string),
  activeVersion: orNull(integer),
  versions: {
    type: 'array',
    items: record({
      version: integer,
      primary: providerTarget,
      fallbacks: { type: 'array', items: providerTarget },
      createdBy: string,
      createdAt: dateTime,
    }),
  },
});

/** A tenant's quota settings; `etag` repeats the ETag header (If-Match of the PUT). */
export const quotaSettings = record({
  enabled: { type: 'boolean' },
  requestsPerMinute: { type: 'integer', minimum: 0 },
  tokensPerDay: { type: 'integer', minimum: 0 },
  etag: string,
  updatedAt: { ...orNull(dateTime), description: 'null while the tenant runs on the defaults' },
});

export const deadLetterReplay = record({ matched: { type: 'integer', minimum: 0 }, replayed: { type: 'integer', minimum: 0 } });

/** Relayed from the AI gateway; `unknown` when its answer could not be read. */
/** One signed receipt of a provenance record (docs/ai-gateway.md, "Receipts"). */
export const provenanceReceipt = record({
  provenanceId: id('provenance'),
  seq: integer,
  event: { enum: ['assist', 'shadow', 'backfill', 'review'] },
  kid: string,
  hash: string,
  signedAt: string,
  jws: string,
});

const instant: JsonSchema = { type: 'string', minLength: 10, maxLength: 40, description: 'ISO 8601 date-time' };
export const receiptExportQuery = closed({ from: instant, to: instant }, ['from', 'to']);

/** JSON Lines: one JSON document per line (the keys, each receipt, the seal). */
export const receiptExportLines: JsonSchema = {
  type: 'string',
  description: 'JSON Lines, verified by `npm run provenance:verify`',
};

export const jwks = closed({ keys: { type: 'array', items: { type: 'object', additionalProperties: true } } }, ['keys']);

export const aiHealth = closed(
  {
    status: { enum: ['ok', 'degraded', 'down', 'unknown'] },
    service: { const: 'ai' },
    dependencies: {
      type: 'object',
      additionalProperties: true,
      description: 'database, quota, vault and provider circuits, each with its `status`',
    },
    checkedInMs: integer,
  },
  ['status'],
);

/** RFC 9457 problem details with the stable `code`; a problem may carry more members (`path`, `acceptedScopes`, ...). */
export const problem: JsonSchema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string', description: '`urn:problem:<code>`' },
    title: string,
    status: { type: 'integer', minimum: 400, maximum: 599 },
    detail: string,
    code: string,
    instance: string,
  },
};
