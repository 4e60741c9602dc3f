import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateEd25519, mintToken, type DevKeyPair } from '../../../platform/auth/dev-keys.js';
import { createTokenVerifier } from '../../../platform/auth/verifier.js';
import { loadSystemConfig } from '../../../processes/config.js';
import type { RunningServer } from '../../../platform/graphql/subgraph-server.js';
import { newId, newUlid } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { systemClock } from '../../../platform/clock.js';
import type { EventEnvelope } from '../../../events/envelope.js';
import type { EnrollmentCounter } from '../../../subgraphs/catalog/enrollment-counter.js';
import { createCatalogEvents } from '../../../subgraphs/catalog/outbox-port.js';
import { startCatalogSubgraph } from '../../../subgraphs/catalog/server.js';
import { publishCourseVersion } from '../../../subgraphs/catalog/use-cases/publish-course-version.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';
import { builtPayload, catalogProducer, consumedEnvelope, registry } from './harness.js';

const COURSE_FIELDS =
  'courseId etag state visibility title tags authors { userId role displayName } taxonomy { taxonomyId nodePath } cover { assetId }';
const TRACEPARENT = `00-${'f'.repeat(32)}-${'e'.repeat(16)}-01`;

interface GraphQLAnswer {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; extensions: { code: string; status?: number; field?: string } }>;
}

describe.each(databaseKinds())('catalog mutations over HTTP on %s', (kind) => {
  let db: TestDatabase;
  let server: RunningServer;
  let keys: DevKeyPair;
  const tenant = newId('tenant');
  const otherTenant = newId('tenant');
  const admin = newId('user');
  const enrollments: { next?: { count: number; source: string } } = {};
  const counter: EnrollmentCounter = {
    approximateActiveEnrollments: async () => enrollments.next ?? { count: 0, source: 'none-configured' },
  };

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    keys = await generateEd25519();
    const verifier = await createTokenVerifier({
      publicKey: JSON.stringify(keys.publicJwk),
      maxTokenLifetimeSeconds: 900,
      clockToleranceSeconds: 5,
    });
    server = await startCatalogSubgraph(
      {
        config: { ...loadSystemConfig({}), host: '127.0.0.1' },
        db: db.prisma,
        verifier,
        logger: silentLogger,
        enrollmentCounter: counter,
      },
      0,
    );
  });
  afterAll(async () => {
    await server?.close();
    await db?.close();
  });

  async function gql(
    query: string,
    variables: Record<string, unknown> = {},
    options: { tenantId?: string; scope?: string; ifMatch?: string; idempotencyKey?: string } = {},
  ): Promise<GraphQLAnswer> {
    const tenantId = options.tenantId ?? tenant;
    const token = await mintToken(keys.privateJwk, { sub: admin, tid: tenantId, scope: options.scope ?? 'catalog.admin' });
    const response = await fetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        'x-tenant-id': tenantId,
        traceparent: TRACEPARENT,
        ...(options.ifMatch !== undefined ? { 'if-match': options.ifMatch } : {}),
        // The subgraph's door refuses a mutation without a key, as the gateway's does.
        ...(options.idempotencyKey !== undefined || /^\s*mutation\b/.test(query)
          ? { 'idempotency-key': options.idempotencyKey ?? newUlid() }
          : {}),
      },
      body: JSON.stringify({ query, variables }),
    });
    return (await response.json()) as GraphQLAnswer;
  }

  const errorOf = (answer: GraphQLAnswer) => answer.errors?.[0]?.extensions;

  async function seedCourse(slug: string, tenantId = tenant) {
    const events = createCatalogEvents(catalogProducer());
    const envelope = consumedEnvelope('built', builtPayload(tenantId, slug, '1.0.0'));
    const version = await db.prisma.$transaction((tx) =>
      publishCourseVersion(tx, envelope, {
        events: events.forRequest(tx, { correlationId: envelope.correlationId }),
        logger: silentLogger,
        gdprZeroingRetentionClasses: ['operational'],
        clock: systemClock,
      }),
    );
    const course = await db.prisma.course.findUniqueOrThrow({ where: { id: version!.courseId } });
    return { course, version: version! };
  }

  const eventsAfter = async (partitionKey: string, afterId: bigint) =>
    (await db.prisma.outboxEvent.findMany({ where: { partitionKey, id: { gt: afterId } }, orderBy: { id: 'asc' } })).map(
      (row) => ({
        envelope: row.envelope as unknown as EventEnvelope,
        headers: row.headers as Record<string, string>,
      }),
    );
  const lastOutboxId = async () => (await db.prisma.outboxEvent.findFirst({ orderBy: { id: 'desc' } }))?.id ?? 0n;

  const UPDATE = `mutation($courseId: ID!, $input: UpdateCourseMetadataInput!) { updateCourseMetadata(courseId: $courseId, input: $input) { ${COURSE_FIELDS} } }`;

  describe('updateCourseMetadata', () => {
    it('needs If-Match: 428 when missing, 412 when stale, and changes nothing either way', async () => {
      const { course } = await seedCourse('if-match');
      const mark = await lastOutboxId();
      const missing = await gql(UPDATE, { courseId: course.id, input: { tags: ['a'] } });
      expect(errorOf(missing)).toMatchObject({ code: 'request.precondition_required', status: 428 });
      const stale = await gql(UPDATE, { courseId: course.id, input: { tags: ['a'] } }, { ifMatch: '"0000"' });
      expect(errorOf(stale)).toMatchObject({ code: 'request.precondition_failed', status: 412 });
      expect(await db.prisma.course.findUniqueOrThrow({ where: { id: course.id } })).toMatchObject({
        tags: [],
        etag: course.etag,
      });
      expect(await eventsAfter(course.id, mark)).toEqual([]);
    });

    it('replaces the given fields under a matching etag and emits metadata_updated caused by the request', async () => {
      const { course } = await seedCourse('metadata');
      const mark = await lastOutboxId();
      const author = { userId: newId('user'), role: 'author', displayName: 'Dr. Grace' };
      const answer = await gql(
        UPDATE,
        {
          courseId: course.id,
          input: {
            title: { en: 'Metadata', de: 'Metadaten' },
            tags: ['ward', 'icu'],
            authors: [author],
            cover: { assetId: newId('mediaAsset') },
          },
        },
        { ifMatch: course.etag },
      );
      expect(answer.errors).toBeUndefined();
      const updated = answer.data!.updateCourseMetadata as { etag: string; title: unknown; tags: string[]; authors: unknown[] };
      expect(updated).toMatchObject({ title: { en: 'Metadata', de: 'Metadaten' }, tags: ['ward', 'icu'], authors: [author] });
      expect(updated.etag).not.toBe(course.etag);

      const [event] = await eventsAfter(course.id, mark);
      registry.validateEnvelope(event.envelope);
      registry.validate(event.envelope.eventType, 1, event.envelope.payload, 'produce');
      expect(event.envelope).toMatchObject({
        eventType: 'catalog.course.metadata_updated',
        partitionKey: course.id,
        tenantId: tenant,
        actor: { type: 'user', id: admin },
        payload: {
          courseId: course.id,
          changedFields: ['title', 'authors', 'tags', 'cover'],
          etag: updated.etag,
          previous: { tags: [], authors: [] },
        },
      });
      expect(event.envelope.causationId).toBe(event.envelope.eventId);
      expect(event.envelope.correlationId).toMatch(/^req_/);
      expect(event.headers.traceparent.slice(0, 36)).toBe(TRACEPARENT.slice(0, 36));

      // The etag that was read before the update is stale now; the unquoted new one matches.
      expect(errorOf(await gql(UPDATE, { courseId: course.id, input: { tags: ['x'] } }, { ifMatch: course.etag }))).toMatchObject(
        { code: 'request.precondition_failed' },
      );
      const unchanged = await gql(
        UPDATE,
        { courseId: course.id, input: { tags: ['ward', 'icu'] } },
        { ifMatch: updated.etag.slice(1, -1) },
      );
      expect((unchanged.data!.updateCourseMetadata as { etag: string }).etag).toBe(updated.etag);
      expect(await eventsAfter(course.id, mark)).toHaveLength(1);
    });

    it('answers a keyed retry with the recorded result (no 412 for its now-stale etag, no second event)', async () => {
      // The gateway's Idempotency-Key record can be lost in a crash after this commit; the retry
      // then reaches the subgraph with the same key, arguments and (now stale) If-Match.
      const { course } = await seedCourse('keyed-metadata');
      const mark = await lastOutboxId();
      const key = newUlid();
      const variables = { courseId: course.id, input: { tags: ['keyed'] } };
      const first = await gql(UPDATE, variables, { ifMatch: course.etag, idempotencyKey: key });
      expect(first.errors).toBeUndefined();
      const retry = await gql(UPDATE, variables, { ifMatch: course.etag, idempotencyKey: key });
      expect(retry).toEqual(first);
      expect((await eventsAfter(course.id, mark)).map((e) => e.envelope.eventType)).toEqual(['catalog.course.metadata_updated']);
      // Without the key, the stale etag is refused as before.
      expect(errorOf(await gql(UPDATE, variables, { ifMatch: course.etag }))).toMatchObject({ status: 412 });
      // Other arguments under the used key are another request.
      const reused = await gql(
        UPDATE,
        { courseId: course.id, input: { tags: ['other'] } },
        { ifMatch: course.etag, idempotencyKey: key },
      );
      expect(errorOf(reused)).toMatchObject({ code: 'idempotency.key_reused', status: 422 });
    });

    it('answers BAD_USER_INPUT for invalid ids, locales, duplicates and foreign taxonomies', async () => {
      const { course } = await seedCourse('bad-input');
      const ifMatch = course.etag;
      const bad = async (input: Record<string, unknown>) =>
        errorOf(await gql(UPDATE, { courseId: course.id, input }, { ifMatch }));
      expect(await bad({})).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input' });
      expect(await bad({ title: { 'en-': 'x' } })).toMatchObject({ code: 'BAD_USER_INPUT' });
      expect(await bad({ defaultLocale: 'fr' })).toMatchObject({ code: 'BAD_USER_INPUT', field: 'defaultLocale' });
      expect(await bad({ tags: ['a', 'a'] })).toMatchObject({ code: 'BAD_USER_INPUT', field: 'tags[1]' });
      expect(await bad({ cover: { assetId: 'crs_nope' } })).toMatchObject({ code: 'BAD_USER_INPUT', field: 'cover.assetId' });
      expect(await bad({ authors: [{ userId: 'someone', role: 'author', displayName: 'X' }] })).toMatchObject({
        code: 'BAD_USER_INPUT',
        field: 'authors[0].userId',
      });

      const foreign = await gql(
        'mutation($input: PublishTaxonomyInput!) { publishTaxonomy(input: $input) { taxonomyId } }',
        { input: { namespace: 'specialties', diff: { added: [{ path: 'icu', label: { en: 'ICU' } }] } } },
        { tenantId: otherTenant },
      );
      const foreignId = (foreign.data!.publishTaxonomy as { taxonomyId: string }).taxonomyId;
      expect(await bad({ taxonomy: [{ taxonomyId: foreignId, nodePath: 'icu' }] })).toMatchObject({
        code: 'BAD_USER_INPUT',
        field: 'taxonomy[0].taxonomyId',
      });
      const own = await gql('mutation($input: PublishTaxonomyInput!) { publishTaxonomy(input: $input) { taxonomyId } }', {
        input: { namespace: 'specialties', diff: { added: [{ path: 'icu', label: { en: 'ICU' } }] } },
      });
      const ownId = (own.data!.publishTaxonomy as { taxonomyId: string }).taxonomyId;
      expect(await bad({ taxonomy: [{ taxonomyId: ownId, nodePath: 'cardio' }] })).toMatchObject({
        code: 'BAD_USER_INPUT',
        field: 'taxonomy[0].nodePath',
      });
      const ok = await gql(
        UPDATE,
        { courseId: course.id, input: { taxonomy: [{ taxonomyId: ownId, nodePath: 'icu' }] } },
        { ifMatch },
      );
      expect((ok.data!.updateCourseMetadata as { taxonomy: unknown }).taxonomy).toEqual([{ taxonomyId: ownId, nodePath: 'icu' }]);
    });

    it('keeps tenants apart and needs the catalog.admin scope', async () => {
      const { course } = await seedCourse('isolated');
      expect(
        errorOf(
          await gql(UPDATE, { courseId: course.id, input: { tags: ['x'] } }, { ifMatch: course.etag, tenantId: otherTenant }),
        ),
      ).toMatchObject({
        code: 'request.not_found',
        status: 404,
      });
      expect(
        (await gql('query($id: ID!) { course(courseId: $id) { courseId } }', { id: course.id }, { tenantId: otherTenant })).data,
      ).toEqual({ course: null });
      expect(
        errorOf(
          await gql(UPDATE, { courseId: course.id, input: { tags: ['x'] } }, { ifMatch: course.etag, scope: 'catalog.read' }),
        ),
      ).toMatchObject({
        code: 'authz.scope_missing',
        status: 403,
      });
      expect(errorOf(await gql(UPDATE, { courseId: 'crs_1', input: { tags: ['x'] } }, { ifMatch: course.etag }))).toMatchObject({
        code: 'BAD_USER_INPUT',
      });
      expect((await db.prisma.course.findUniqueOrThrow({ where: { id: course.id } })).tags).toEqual([]);
    });
  });

  describe('course lifecycle', () => {
    const VISIBILITY =
      'mutation($id: ID!, $to: String!, $reason: String!) { changeCourseVisibility(courseId: $id, to: $to, reason: $reason) { visibility state } }';
    const ARCHIVE = 'mutation($id: ID!, $reason: String!) { archiveCourse(courseId: $id, reason: $reason) { state } }';

    it('changes visibility with an event, treats the same value as a no-op and refuses unknown values', async () => {
      const { course } = await seedCourse('visible');
      const mark = await lastOutboxId();
      expect((await gql(VISIBILITY, { id: course.id, to: 'marketplace', reason: 'ready for sale' })).data).toEqual({
        changeCourseVisibility: { visibility: 'marketplace', state: 'registered' },
      });
      expect((await gql(VISIBILITY, { id: course.id, to: 'marketplace', reason: 'again' })).errors).toBeUndefined();
      expect(errorOf(await gql(VISIBILITY, { id: course.id, to: 'public', reason: 'x' }))).toMatchObject({
        code: 'BAD_USER_INPUT',
      });
      expect(errorOf(await gql(VISIBILITY, { id: course.id, to: 'org', reason: '  ' }))).toMatchObject({
        code: 'BAD_USER_INPUT',
      });
      const events = await eventsAfter(course.id, mark);
      expect(events.map((e) => [e.envelope.eventType, e.envelope.payload])).toEqual([
        ['catalog.course.visibility_changed', { courseId: course.id, from: 'org', to: 'marketplace', reason: 'ready for sale' }],
      ]);
    });

    it('archives once, then refuses edits of the archived course with lifecycle.illegal_transition', async () => {
      const { course } = await seedCourse('archived');
      const mark = await lastOutboxId();
      expect((await gql(ARCHIVE, { id: course.id, reason: 'retired guideline' })).data).toEqual({
        archiveCourse: { state: 'archived' },
      });
      expect((await gql(ARCHIVE, { id: course.id, reason: 'again' })).data).toEqual({ archiveCourse: { state: 'archived' } });
      expect(errorOf(await gql(VISIBILITY, { id: course.id, to: 'marketplace', reason: 'x' }))).toMatchObject({
        code: 'lifecycle.illegal_transition',
        status: 409,
      });
      // Archiving moved the etag (state is part of it): the edit names the archived course's tag.
      const archived = await db.prisma.course.findUniqueOrThrow({ where: { id: course.id } });
      expect(archived.etag).not.toBe(course.etag);
      expect(
        errorOf(await gql(UPDATE, { courseId: course.id, input: { tags: ['x'] } }, { ifMatch: archived.etag })),
      ).toMatchObject({ code: 'lifecycle.illegal_transition', status: 409 });
      const events = await eventsAfter(course.id, mark);
      expect(events.map((e) => [e.envelope.eventType, e.envelope.payload])).toEqual([
        ['catalog.course.archived', { courseId: course.id, reason: 'retired guideline' }],
      ]);
      registry.validate('catalog.course.archived', 1, events[0].envelope.payload, 'produce');
    });
  });

  describe('course version lifecycle', () => {
    const DEPRECATE =
      'mutation($id: ID!, $reason: String!) { deprecateCourseVersion(courseVersionId: $id, reason: $reason) { state } }';
    const WITHDRAW =
      'mutation($id: ID!, $reason: String!) { withdrawCourseVersion(courseVersionId: $id, reason: $reason) { courseVersion { state } affectedEnrollmentsApprox enrollmentCountSource } }';

    it('deprecates, then withdraws with the enrollment count, and refuses going back', async () => {
      const { course, version } = await seedCourse('versions');
      const mark = await lastOutboxId();
      expect((await gql(DEPRECATE, { id: version.id, reason: 'superseded' })).data).toEqual({
        deprecateCourseVersion: { state: 'deprecated' },
      });
      enrollments.next = { count: 17, source: 'enrollment-svc' };
      expect((await gql(WITHDRAW, { id: version.id, reason: 'clinical error in module 2' })).data).toEqual({
        withdrawCourseVersion: {
          courseVersion: { state: 'withdrawn' },
          affectedEnrollmentsApprox: 17,
          enrollmentCountSource: 'enrollment-svc',
        },
      });
      enrollments.next = undefined;
      expect(errorOf(await gql(DEPRECATE, { id: version.id, reason: 'x' }))).toMatchObject({
        code: 'lifecycle.illegal_transition',
        status: 409,
      });
      expect((await gql(WITHDRAW, { id: version.id, reason: 'again' })).data).toEqual({
        withdrawCourseVersion: {
          courseVersion: { state: 'withdrawn' },
          affectedEnrollmentsApprox: 0,
          enrollmentCountSource: 'none-configured',
        },
      });
      const events = await eventsAfter(course.id, mark);
      expect(events.map((e) => [e.envelope.eventType, e.envelope.payload])).toEqual([
        ['catalog.course_version.deprecated', { courseVersionId: version.id, courseId: course.id, reason: 'superseded' }],
        [
          'catalog.course_version.withdrawn',
          {
            courseVersionId: version.id,
            courseId: course.id,
            reason: 'clinical error in module 2',
            affectedEnrollmentsApprox: 17,
          },
        ],
      ]);
      for (const { envelope } of events) {
        registry.validate(envelope.eventType, 1, envelope.payload, 'produce');
        expect(envelope.partitionKey).toBe(course.id);
      }
    });

    it('refuses a withdrawal without a reason as BAD_USER_INPUT, and versions of other tenants as request.not_found', async () => {
      const { version } = await seedCourse('no-reason');
      expect(errorOf(await gql(WITHDRAW, { id: version.id, reason: '' }))).toMatchObject({ code: 'BAD_USER_INPUT' });
      expect(errorOf(await gql(WITHDRAW, { id: version.id, reason: null }))).toMatchObject({ code: 'BAD_USER_INPUT' });
      expect(errorOf(await gql(WITHDRAW, { id: version.id, reason: 'x' }, { tenantId: otherTenant }))).toMatchObject({
        code: 'request.not_found',
      });
      expect(errorOf(await gql(DEPRECATE, { id: version.id, reason: 'x' }, { tenantId: otherTenant }))).toMatchObject({
        code: 'request.not_found',
      });
      expect((await db.prisma.courseVersion.findUniqueOrThrow({ where: { id: version.id } })).state).toBe('published');
    });
  });

  describe('publishTaxonomy', () => {
    const PUBLISH =
      'mutation($input: PublishTaxonomyInput!) { publishTaxonomy(input: $input) { taxonomyId namespace version nodes { path label } } }';

    it('publishes versions from diffs with catalog.taxonomy.updated, checking expectedVersion', async () => {
      const first = await gql(PUBLISH, {
        input: {
          namespace: 'clinical',
          expectedVersion: 0,
          diff: {
            added: [
              { path: 'cardio', label: { en: 'Cardiology' } },
              { path: 'cardio/ecg', label: { en: 'ECG' } },
              { path: 'neuro', label: { en: 'Neuro' } },
            ],
          },
        },
      });
      const taxonomy = first.data!.publishTaxonomy as { taxonomyId: string; version: number };
      expect(taxonomy.version).toBe(1);
      const mark = await lastOutboxId();
      const diff = {
        removed: ['neuro'],
        moved: [{ from: 'cardio', to: 'heart' }],
        renamed: [{ path: 'heart', label: { en: 'Heart' } }],
      };
      const second = await gql(PUBLISH, { input: { namespace: 'clinical', expectedVersion: 1, diff } }, { ifMatch: '"1"' });
      expect(second.data!.publishTaxonomy).toEqual({
        taxonomyId: taxonomy.taxonomyId,
        namespace: 'clinical',
        version: 2,
        nodes: [
          { path: 'heart', label: { en: 'Heart' } },
          { path: 'heart/ecg', label: { en: 'ECG' } },
        ],
      });
      const [event] = await eventsAfter(taxonomy.taxonomyId, mark);
      registry.validate('catalog.taxonomy.updated', 1, event.envelope.payload, 'produce');
      expect(event.envelope).toMatchObject({
        eventType: 'catalog.taxonomy.updated',
        partitionKey: taxonomy.taxonomyId,
        payload: { taxonomyId: taxonomy.taxonomyId, namespace: 'clinical', version: 2, diff: { added: [], ...diff } },
      });
      expect(await db.prisma.taxonomyVersion.count({ where: { taxonomyId: taxonomy.taxonomyId } })).toBe(2);

      expect(
        errorOf(await gql(PUBLISH, { input: { namespace: 'clinical', expectedVersion: 1, diff: { removed: ['heart'] } } })),
      ).toMatchObject({
        code: 'request.conflict',
        status: 409,
      });
      expect(
        errorOf(await gql(PUBLISH, { input: { namespace: 'clinical', diff: { removed: ['nowhere'] } } }, { ifMatch: '"2"' })),
      ).toMatchObject({
        code: 'BAD_USER_INPUT',
        field: 'diff.removed[0]',
      });
      expect(errorOf(await gql(PUBLISH, { input: { namespace: 'clinical', diff: {} } }, { ifMatch: '"2"' }))).toMatchObject({
        code: 'BAD_USER_INPUT',
        field: 'diff',
      });
      expect(await db.prisma.taxonomyVersion.count({ where: { taxonomyId: taxonomy.taxonomyId } })).toBe(2);
      // Another tenant's namespace of the same name is another taxonomy.
      const foreign = await gql(
        PUBLISH,
        { input: { namespace: 'clinical', expectedVersion: 0, diff: { added: [{ path: 'x', label: { en: 'X' } }] } } },
        { tenantId: otherTenant },
      );
      expect((foreign.data!.publishTaxonomy as { taxonomyId: string; version: number }).version).toBe(1);
    });

    it('needs If-Match with the etag to publish over an existing version (428 without, 412 stale); the first needs none', async () => {
      const PUBLISH_ETAG = 'mutation($input: PublishTaxonomyInput!) { publishTaxonomy(input: $input) { version etag } }';
      const add = (path: string) => ({ namespace: 'precondition', diff: { added: [{ path, label: { en: path } }] } });
      // The first version creates the taxonomy: nothing to match, and a tag given matches nothing.
      expect(errorOf(await gql(PUBLISH_ETAG, { input: add('a') }, { ifMatch: '"0"' }))).toMatchObject({
        code: 'request.precondition_failed',
        status: 412,
      });
      const first = await gql(PUBLISH_ETAG, { input: add('a') });
      expect(first.data!.publishTaxonomy).toEqual({ version: 1, etag: '"1"' });

      expect(errorOf(await gql(PUBLISH_ETAG, { input: add('b') }))).toMatchObject({
        code: 'request.precondition_required',
        status: 428,
      });
      expect(errorOf(await gql(PUBLISH_ETAG, { input: add('b') }, { ifMatch: '"7"' }))).toMatchObject({
        code: 'request.precondition_failed',
        status: 412,
        etag: '"1"',
      });
      expect(await db.prisma.taxonomy.findFirst({ where: { tenantId: tenant, namespace: 'precondition' } })).toMatchObject({
        version: 1,
      });
      const second = await gql(PUBLISH_ETAG, { input: add('b') }, { ifMatch: '"1"' });
      expect(second.data!.publishTaxonomy).toEqual({ version: 2, etag: '"2"' });
    });
  });

  it('answers service.unavailable for a DLQ replay when no bus is wired, after checking the filter', async () => {
    const REPLAY = 'mutation($filter: DeadLetterFilterInput!) { replayDeadLetters(filter: $filter) { matched replayed } }';
    expect(errorOf(await gql(REPLAY, { filter: { maxCount: 5000 } }))).toMatchObject({
      code: 'BAD_USER_INPUT',
      field: 'filter.maxCount',
    });
    expect(errorOf(await gql(REPLAY, { filter: { subject: 'a..b' } }))).toMatchObject({
      code: 'BAD_USER_INPUT',
      field: 'filter.subject',
    });
    expect(errorOf(await gql(REPLAY, { filter: {} }))).toMatchObject({ code: 'events.replay_filter_required', field: 'filter' });
    expect(errorOf(await gql(REPLAY, { filter: { subject: '>' } }))).toMatchObject({ code: 'service.unavailable', status: 503 });
    expect(errorOf(await gql(REPLAY, { filter: {} }, { scope: 'catalog.read' }))).toMatchObject({ code: 'authz.scope_missing' });
  });
});
