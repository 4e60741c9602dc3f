import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier } from '../../../platform/auth/verifier.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { COURSE, COURSES, PROVENANCE } from '../../../rest-compat/documents.js';
import { startAiSubgraph } from '../../../subgraphs/ai/server.js';
import { courseRow } from '../../support/course-row.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';
import { startAiHarness, TENANT_A, type AiHarness } from '../ai/support.js';
import { startCatalogClient, type CatalogClient } from '../catalog/subgraph-client.js';

/**
 * SUBGRAPH_EXECUTION=compiled (the default) must answer every operation exactly as graphql-js
 * does: the same status, data, errors (message, path, locations, code) for the documents the
 * gateway and REST-compat send, the entity fetches of a query plan, introspection, and each way an
 * operation fails. Each case is sent to two subgraphs on one database, one per execution.
 */
type Expectation = 'data' | { code: string };
interface Case {
  name: string;
  query: string;
  variables?: Record<string, unknown>;
  /** What the answer must hold, so that two equal answers are not two equal failures. */
  expect: Expectation;
}

const INTERPRETED = { SUBGRAPH_EXECUTION: 'graphql-js' };

function checkMeaningful(
  answer: { status: number; body: { data?: unknown; errors?: Array<{ extensions?: { code?: string } }> } },
  expectation: Expectation,
) {
  if (expectation === 'data') {
    expect(answer.body.errors).toBeUndefined();
    expect(answer.status).toBe(200);
  } else {
    expect(answer.body.errors?.map((error) => error.extensions?.code)).toContain(expectation.code);
  }
}

describe.each(databaseKinds())('compiled execution answers as graphql-js: catalog subgraph on %s', (kind) => {
  let db: TestDatabase;
  let compiled: CatalogClient;
  let interpreted: CatalogClient;
  const tenant = newId('tenant');
  const other = newId('tenant');
  const taxonomyId = newId('taxonomy');
  const [full, bare, foreign] = [
    courseRow(tenant, {
      title: { en: 'Cardiology basics', fr: 'Bases de cardiologie' },
      description: { en: 'Hearts', fr: 'Coeurs' },
      taxonomy: [{ taxonomyId, nodePath: 'clinical/cardiology' }],
      cover: { assetId: newId('mediaAsset') },
      sourceDraftId: newId('courseDraft'),
      latestVersionLabel: '1.1.0',
    }),
    courseRow(tenant, { authors: [], tags: [], description: {} }),
    courseRow(other),
  ];
  const versionIds = [newId('courseVersion'), newId('courseVersion')];

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    await db.prisma.course.createMany({ data: [full, bare, foreign] });
    await db.prisma.courseVersion.createMany({
      data: versionIds.map((id, i) => ({
        id,
        tenantId: tenant,
        courseId: full.id,
        versionLabel: `1.${i}.0`,
        major: 1,
        minor: i,
        patch: 0,
        publishedBy: newId('user'),
        durationMinutes: 30 + i,
        estimatedReadingMinutes: i === 0 ? null : 12,
        locales: ['en', 'fr'],
        moduleSummaries: i === 0 ? undefined : [{ moduleId: 'm1', title: 'Intro', durationMinutes: 5 }],
        playPackageId: newId('playPackage'),
        playPackageSha256: 'c'.repeat(64),
        playPackageFormat: 'v2',
        changelog: i === 0 ? undefined : { en: 'Second edition' },
        becameLatest: i === 1,
        sequence: i + 1,
      })),
    });
    await db.prisma.taxonomy.create({
      data: {
        id: taxonomyId,
        tenantId: tenant,
        namespace: 'clinical',
        version: 2,
        nodes: [{ path: 'clinical/cardiology', label: 'Cardiology' }],
      },
    });
    compiled = await startCatalogClient(db.prisma);
    interpreted = await startCatalogClient(db.prisma, INTERPRETED);
  });
  afterAll(async () => {
    await compiled?.close();
    await interpreted?.close();
    await db?.close();
  });

  const cases: Case[] = [
    { name: 'REST-compat list, first page', query: COURSES, variables: { first: 1 }, expect: 'data' },
    { name: 'REST-compat list, default page', query: COURSES, variables: {}, expect: 'data' },
    { name: 'REST-compat course', query: COURSE, variables: { courseId: full.id }, expect: 'data' },
    { name: 'REST-compat course of another tenant (null)', query: COURSE, variables: { courseId: foreign.id }, expect: 'data' },
    {
      name: 'a nested page: versions, their course, localized text, counts',
      query: `{ courses(first: 5) { count pageInfo { hasNextPage endCursor } edges { cursor node {
        courseId slug state latestVersionLabel createdAt updatedAt tenantId title description
        localizedTitle { locale text } cover { assetId } taxonomy { taxonomyId nodePath }
        versions { courseVersionId versionLabel becameLatest estimatedReadingMinutes locales sequence changelog state createdAt
          moduleSummaries { __typename } playPackage { __typename } course { courseId slug } } } } } }`,
      expect: 'data',
    },
    {
      name: 'aliases, fragments, @skip and @include by variables',
      query: `query Pair($a: ID!, $b: ID!, $withVersions: Boolean!, $noSlug: Boolean!) {
        one: course(courseId: $a) { ...Card versions @include(if: $withVersions) { versionLabel } }
        two: course(courseId: $b) { ...Card slug @skip(if: $noSlug) __typename }
      } fragment Card on Course { courseId etag tags authors { userId role displayName } }`,
      variables: { a: full.id, b: bare.id, withVersions: true, noSlug: true },
      expect: 'data',
    },
    {
      name: 'the entity fetches of a query plan (_entities: courses, a version, a taxonomy, unknown keys)',
      query: `query($r: [_Any!]!) { _entities(representations: $r) {
        __typename ... on Course { courseId slug versions { versionLabel } }
        ... on CourseVersion { courseVersionId durationMinutes course { courseId } }
        ... on Taxonomy { taxonomyId namespace version etag nodes { __typename } } } }`,
      variables: {
        r: [
          { __typename: 'Course', courseId: full.id },
          { __typename: 'Course', courseId: foreign.id },
          { __typename: 'Course', courseId: newId('course') },
          { __typename: 'CourseVersion', courseVersionId: versionIds[1] },
          { __typename: 'Taxonomy', taxonomyId },
        ],
      },
      expect: 'data',
    },
    {
      name: 'the versions and one version by id',
      query: `query($c: ID!, $v: ID!) { courseVersions(courseId: $c) { versionLabel } courseVersion(courseVersionId: $v) { versionLabel } }`,
      variables: { c: full.id, v: versionIds[0] },
      expect: 'data',
    },
    {
      name: 'introspection',
      query: '{ __schema { queryType { name } types { name kind } } __type(name: "Course") { fields { name args { name } } } }',
      expect: 'data',
    },
    { name: 'the subgraph SDL (composition)', query: '{ _service { sdl } }', expect: 'data' },
    {
      name: 'a forged cursor (the resolver’s stable code)',
      query: COURSES,
      variables: { first: 2, after: 'forged' },
      expect: { code: 'BAD_USER_INPUT' },
    },
    {
      name: 'a variable of the wrong type (400)',
      query: COURSES,
      variables: { first: 'twenty' },
      expect: { code: 'BAD_USER_INPUT' },
    },
    { name: 'a required variable missing (400)', query: COURSE, variables: {}, expect: { code: 'BAD_USER_INPUT' } },
    {
      name: 'a page size out of bounds (the resolver’s own check)',
      query: COURSES,
      variables: { first: 0 },
      expect: { code: 'BAD_USER_INPUT' },
    },
  ];

  it.each(cases)('$name', async ({ query, variables, expect: expectation }) => {
    const ours = await compiled.call(query, variables ?? {}, { tenantId: tenant });
    const reference = await interpreted.call(query, variables ?? {}, { tenantId: tenant });
    checkMeaningful(reference, expectation);
    expect(ours).toEqual(reference);
  });

  it('pages with the compiled path’s own cursor exactly as graphql-js does', async () => {
    const first = await compiled.call(COURSES, { first: 1 }, { tenantId: tenant });
    const after = (first.body.data as { courses: { pageInfo: { endCursor: string } } }).courses.pageInfo.endCursor;
    const ours = await compiled.call(COURSES, { first: 1, after }, { tenantId: tenant });
    const reference = await interpreted.call(COURSES, { first: 1, after }, { tenantId: tenant });
    expect(ours).toEqual(reference);
    const ids = (answer: typeof first) =>
      (answer.body.data as { courses: { edges: Array<{ node: { courseId: string } }> } }).courses.edges.map(
        (edge) => edge.node.courseId,
      );
    expect([...ids(first), ...ids(ours)].sort()).toEqual([full.id, bare.id].sort());
  });
});

describe.each(databaseKinds())('compiled execution answers as graphql-js: AI subgraph on %s', (kind) => {
  let ai: AiHarness;
  let interpreted: { url: string; close(): Promise<void> };
  const course = newId('course');
  const provenanceId = newId('provenance');

  beforeAll(async () => {
    ai = await startAiHarness(kind, {});
    await ai.db.prisma.aIProvenance.create({
      data: {
        id: provenanceId,
        tenantId: TENANT_A,
        actorType: 'service',
        actorId: 'svc-test',
        featureKey: 'course.summary',
        status: 'completed',
        subjectRef: course,
        reviewState: 'approved',
        heldText: 'released text',
      },
    });
    const verifier = await createTokenVerifier({
      publicKey: JSON.stringify(ai.keys.publicJwk),
      maxTokenLifetimeSeconds: 900,
      clockToleranceSeconds: 30,
    });
    const config = loadSystemConfig({ ...INTERPRETED, HOST: '127.0.0.1', DATA_DIR: ai.config.dataDir, AI_CONFIG_CACHE_MS: '0' });
    interpreted = await startAiSubgraph({ config, db: ai.db.prisma, verifier, logger: silentLogger }, 0);
  });
  afterAll(async () => {
    await interpreted?.close();
    await ai?.close();
  });

  async function call(url: string, query: string, variables: Record<string, unknown>) {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${await ai.token(TENANT_A)}`,
        'x-tenant-id': TENANT_A,
      },
      body: JSON.stringify({ query, variables }),
    });
    return {
      status: response.status,
      body: (await response.json()) as { data?: unknown; errors?: Array<{ extensions?: { code?: string } }> },
    };
  }

  const cases: Case[] = [
    {
      name: 'the provenance of courses in a nested gateway page (_entities)',
      query: `query($r: [_Any!]!) { _entities(representations: $r) { ... on Course { courseId aiProvenance(first: 3) { provenanceId subjectRef status reviewState } } } }`,
      variables: {
        r: [
          { __typename: 'Course', courseId: course },
          { __typename: 'Course', courseId: newId('course') },
        ],
      },
      expect: 'data',
    },
    { name: 'REST-compat provenance', query: PROVENANCE, variables: { provenanceId }, expect: 'data' },
    {
      name: 'an unknown provenance id (null)',
      query: PROVENANCE,
      variables: { provenanceId: newId('provenance') },
      expect: 'data',
    },
    {
      name: 'a malformed provenance id (the resolver’s stable code)',
      query: PROVENANCE,
      variables: { provenanceId: 'prov_unknown' },
      expect: { code: 'BAD_USER_INPUT' },
    },
    {
      name: 'a variable of the wrong type (400)',
      query: PROVENANCE,
      variables: { provenanceId: { no: 1 } },
      expect: { code: 'BAD_USER_INPUT' },
    },
  ];

  it.each(cases)('$name', async ({ query, variables, expect: expectation }) => {
    const ours = await call(ai.url, query, variables ?? {});
    const reference = await call(interpreted.url, query, variables ?? {});
    checkMeaningful(reference, expectation);
    expect(ours).toEqual(reference);
  });
});
