/**
 * What the gateway's response cache may keep, under which key, and which tags an entry and an
 * invalidation carry (docs/operations.md, "Response cache"). Pure: the Apollo plugin, the stores and
 * the event follower turn their inputs into plain data and ask here.
 */

/**
 * Root fields whose answers may be cached: the catalog's reads. Everything else (the AI subgraph's
 * reads, which carry provenance and review text, i.e. PHI) is never cached.
 */
export const CACHEABLE_ROOT_FIELDS: ReadonlySet<string> = new Set([
  'course',
  'courses',
  'courseVersion',
  'courseVersions',
  'taxonomy',
]);

/** Root fields whose answer is a list: it depends on every course of the tenant. */
const LIST_ROOT_FIELDS: ReadonlySet<string> = new Set(['courses', 'courseVersions']);

/** The id fields whose values tag an entry, and the tag kind each gives. */
export const ID_FIELDS = { courseId: 'c', courseVersionId: 'v', taxonomyId: 'x' } as const;
export type IdField = keyof typeof ID_FIELDS;

/** At most this many entity tags per entry; an answer with more depends on the tenant's list tag instead. */
export const MAX_ENTITY_TAGS = 256;

/**
 * Tags are Redis key suffixes and space-separated in stored entries: their parts are URI-encoded,
 * so no tag holds a space, a newline or a `:` of its own.
 */
function part(value: string): string {
  return encodeURIComponent(value);
}

export const GLOBAL_TAG = 'g';
export function tenantTag(tenantId: string): string {
  return `t:${part(tenantId)}`;
}
export function listTag(tenantId: string): string {
  return `l:${part(tenantId)}`;
}
export function entityTag(tenantId: string, field: IdField, id: string): string {
  return `${ID_FIELDS[field]}:${part(tenantId)}:${part(id)}`;
}

/**
 * Whose entries an invalidation of `tags` can drop: every tenant's for the global tag, else the
 * tenants the tags name (each tag but the global one is `<kind>:<tenant>[:<id>]`). The cache Redis
 * then deletes the bytes of those tenants' dropped entries (redis-store.ts, `sweep`).
 */
export function tenantsOfTags(tags: readonly string[]): 'all' | Set<string> {
  const tenants = new Set<string>();
  for (const tag of tags) {
    if (tag === GLOBAL_TAG) return 'all';
    const encoded = tag.split(':')[1];
    if (encoded) tenants.add(decodeURIComponent(encoded));
  }
  return tenants;
}

/** What the plugin learned of an operation from its document (gateway/response-cache/document.ts). */
export interface OperationShape {
  kind: 'query' | 'mutation' | 'subscription';
  rootFields: readonly string[];
  /** A selected field is resolved outside the catalog (e.g. Course.aiProvenance). */
  selectsNonCatalogField: boolean;
  /** Id arguments of the document (literals and variables), e.g. course(courseId: $id). */
  argumentIds: ReadonlyArray<{ field: IdField; id: string }>;
  /** Root fields of a mutation that the catalog resolves (it changes catalog data). */
  catalogMutation: boolean;
}

export type CacheDecision =
  { cacheable: true } | { cacheable: false; reason: 'not_a_query' | 'root_field' | 'non_catalog_field' };

export function decide(shape: OperationShape): CacheDecision {
  if (shape.kind !== 'query') return { cacheable: false, reason: 'not_a_query' };
  if (shape.rootFields.length === 0 || !shape.rootFields.every((f) => CACHEABLE_ROOT_FIELDS.has(f))) {
    return { cacheable: false, reason: 'root_field' };
  }
  if (shape.selectsNonCatalogField) return { cacheable: false, reason: 'non_catalog_field' };
  return { cacheable: true };
}

/** Everything an answer may differ by: the key is a hash of this (see response-cache.ts). */
export interface KeyMaterial {
  tenantId: string;
  scopes: ReadonlySet<string>;
  queryHash: string;
  operationName: string | null;
  /** Canonical JSON of the variables. */
  variables: string;
  /** The request's Accept-Language, normalised: localizedTitle and friends resolve by it. */
  acceptLanguage: string;
}

export function keyParts(material: KeyMaterial): string[] {
  return [
    'v1',
    material.tenantId,
    [...material.scopes].sort().join(' '),
    material.queryHash,
    material.operationName ?? '',
    material.variables,
    normaliseAcceptLanguage(material.acceptLanguage),
  ];
}

export function normaliseAcceptLanguage(value: string | undefined): string {
  return (value ?? '').toLowerCase().replace(/\s+/g, '');
}

/**
 * The tags an answer depends on. Every entry depends on the global tag and its tenant's tag (a
 * taxonomy change, or a catalog mutation that cannot name what it changed, drops the whole tenant). A list answer, an answer with a null root field (the
 * entity may be registered next), or one whose entities cannot all be named by the ids it holds
 * (`found`, read from the answer after @skip/@include: answer-dependencies.ts) also depends
 * on the tenant's list tag, which every catalog event of the tenant drops.
 */
export function entryTags(
  tenantId: string,
  shape: OperationShape,
  data: Record<string, unknown>,
  found: { ids: ReadonlyArray<{ field: IdField; id: string }>; complete: boolean },
): string[] {
  const tags = new Set([GLOBAL_TAG, tenantTag(tenantId)]);
  const hasNullRoot = Object.values(data).some((value) => value === null);
  const isList = shape.rootFields.some((f) => LIST_ROOT_FIELDS.has(f));
  if (isList || hasNullRoot || !found.complete) tags.add(listTag(tenantId));
  for (const { field, id } of [...shape.argumentIds, ...found.ids].slice(0, MAX_ENTITY_TAGS)) {
    tags.add(entityTag(tenantId, field, id));
  }
  return [...tags];
}

/**
 * Catalog mutations that change one entity, and the argument that names it. Such a write drops what
 * its event will drop (eventTags): its course, its version and the tenant's lists, which may hold
 * them; not the tenant's whole cache. A version's answer and its course's (latestVersionLabel)
 * change together, so a version mutation is narrow only when its answer names the version's course.
 */
const SINGLE_ENTITY_MUTATIONS: ReadonlyMap<string, IdField> = new Map([
  ['updateCourseMetadata', 'courseId'],
  ['changeCourseVisibility', 'courseId'],
  ['archiveCourse', 'courseId'],
  ['deprecateCourseVersion', 'courseVersionId'],
  ['withdrawCourseVersion', 'courseVersionId'],
]);

/**
 * The tags a catalog mutation that took effect drops, before its answer is sent (the writer reads
 * its own write; the event follows on every replica). `answerIds` are the ids its answer carries
 * (answer-dependencies.ts). Any other mutation (a taxonomy, a dead-letter replay, several root
 * fields of which one is not listed above), or one whose entities cannot be named, drops its
 * tenant's whole cache.
 */
export function mutationTags(
  tenantId: string,
  shape: Pick<OperationShape, 'rootFields' | 'argumentIds'>,
  answerIds: ReadonlyArray<{ field: IdField; id: string }>,
): string[] {
  const whole = [tenantTag(tenantId)];
  const named = [...shape.argumentIds, ...answerIds];
  const kinds = shape.rootFields.map((field) => SINGLE_ENTITY_MUTATIONS.get(field));
  if (kinds.length === 0 || kinds.some((kind) => kind === undefined)) return whole;
  for (const kind of kinds) if (!named.some((id) => id.field === kind)) return whole;
  const changesVersion = kinds.includes('courseVersionId');
  // The course of a version: only its answer can say which (one version per operation, so no doubt).
  if (changesVersion && (kinds.length > 1 || !answerIds.some((id) => id.field === 'courseId'))) return whole;
  if (named.length > MAX_ENTITY_TAGS) return whole;
  const tags = new Set([listTag(tenantId)]);
  for (const { field, id } of named) tags.add(entityTag(tenantId, field, id));
  return [...tags];
}

/** The fields of a catalog event the invalidation reads (tolerant reader: nothing else). */
export interface CatalogEventFacts {
  eventType?: unknown;
  tenantId?: unknown;
  partitionKey?: unknown;
  payload?: unknown;
  /** When the event happened: set when its outbox row was written, in the transaction that commits it. */
  occurredAt?: unknown;
}

/**
 * The tags a published catalog event drops. Course and course-version events drop their course,
 * version and the tenant's list tag; taxonomy events and event types not known here drop the
 * whole tenant (a taxonomy is shown inside courses that do not select its id); an event without a
 * tenant drops everything.
 */
export function eventTags(event: CatalogEventFacts): string[] {
  if (typeof event.tenantId !== 'string' || event.tenantId === '') return [GLOBAL_TAG];
  const tenantId = event.tenantId;
  const type = typeof event.eventType === 'string' ? event.eventType : '';
  if (!type.startsWith('catalog.course.') && !type.startsWith('catalog.course_version.')) return [tenantTag(tenantId)];
  const payload = (event.payload !== null && typeof event.payload === 'object' ? event.payload : {}) as Record<string, unknown>;
  const tags = new Set([listTag(tenantId)]);
  const courseIds = [event.partitionKey, payload.courseId].filter((v): v is string => typeof v === 'string' && v !== '');
  // Without a course id the event cannot be narrowed to one course.
  if (courseIds.length === 0) return [tenantTag(tenantId)];
  for (const id of courseIds) tags.add(entityTag(tenantId, 'courseId', id));
  if (typeof payload.courseVersionId === 'string') tags.add(entityTag(tenantId, 'courseVersionId', payload.courseVersionId));
  return [...tags];
}

/** An RFC 3339 date-time, as the envelope writes occurredAt (events/schemas/envelope-schema.ts). */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * Seconds from an event's `occurredAt` to `nowMs`, when this replica's invalidation for it was done
 * (response_cache_invalidation_lag_seconds). Undefined when `occurredAt` is missing or not a
 * date-time: such an event is still invalidated, it just measures nothing. A producer whose clock
 * runs ahead of this replica's would give a negative lag; it counts as 0, not as an error.
 */
export function invalidationLagSeconds(occurredAt: unknown, nowMs: number): number | undefined {
  if (typeof occurredAt !== 'string' || !DATE_TIME.test(occurredAt)) return undefined;
  const at = Date.parse(occurredAt);
  if (!Number.isFinite(at)) return undefined;
  return Math.max(0, nowMs - at) / 1000;
}
