import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../../gateway/gateway.js';
import type { RunningServer } from '../../../platform/graphql/subgraph-server.js';
import { newId } from '../../../platform/ids.js';
import { createLogger } from '../../../platform/observability/logger.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { startAiSubgraph } from '../../../subgraphs/ai/server.js';
import { startCatalogFixture, startFixtureGateway, type CatalogFixture } from '../../support/catalog-fixture.js';
import { courseRow } from '../../support/course-row.js';
import { startFakeReplica, type FakeReplica } from '../../support/fake-subgraph.js';

/**
 * The largest entity fetches the gateway itself makes stay within the subgraphs' cap on
 * representations (QUERY_MAX_REPRESENTATIONS, 500): the only cross-subgraph entity is Course →
 * AI (`aiProvenance`), a page holds at most 100 courses (MAX_PAGE_SIZE), and the gateway sends each
 * distinct representation once — the planner repeats a course once per version when the page asks
 * `versions { course { aiProvenance } }`. Real catalog and AI subgraphs (the AI one behind a relay
 * that records what each `_entities` fetch carried), 100 courses of 10 versions. Issue #24, item 5.
 */
const TENANT = newId('tenant');
const COURSES = 100;
const VERSIONS = 10;

let fixture: CatalogFixture;
let ai: RunningServer;
let aiRelay: FakeReplica;
let gateway: RunningGateway;

function versionRow(courseId: string, sequence: number) {
  return {
    id: newId('courseVersion'),
    tenantId: TENANT,
    courseId,
    versionLabel: `1.${sequence}.0`,
    major: 1,
    minor: sequence,
    patch: 0,
    publishedBy: newId('user'),
    durationMinutes: 30,
    locales: ['en'],
    playPackageId: newId('playPackage'),
    playPackageSha256: 'a'.repeat(64),
    playPackageFormat: 'v2',
    sequence,
  };
}

beforeAll(async () => {
  fixture = await startCatalogFixture({ tenant: TENANT, scope: 'catalog.read ai.assist', dataDir: '.data/entity-fetches-test' });
  const courses = Array.from({ length: COURSES }, () => courseRow(TENANT));
  await fixture.db.prisma.course.createMany({ data: courses });
  await fixture.db.prisma.courseVersion.createMany({
    data: courses.flatMap((course) => Array.from({ length: VERSIONS }, (_, i) => versionRow(course.id, i + 1))),
  });
  const config = loadSystemConfig({ HOST: '127.0.0.1', DATA_DIR: '.data/entity-fetches-test' });
  ai = await startAiSubgraph(
    { config, db: fixture.db.prisma, verifier: fixture.verifier, logger: createLogger({ level: 'silent' }) },
    0,
  );
  aiRelay = await startFakeReplica(ai.url);
  ({ gateway } = await startFixtureGateway(fixture, { subgraphUrls: { catalog: fixture.catalog.url, ai: aiRelay.url } }));
});

afterAll(async () => {
  await gateway?.close();
  await aiRelay?.close();
  await ai?.close();
  await fixture?.close();
});

beforeEach(() => {
  aiRelay.representations.splice(0);
});

async function graphql(query: string) {
  const response = await fetch(`${gateway.url}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${fixture.token}`, 'x-tenant-id': TENANT, 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const text = await response.text();
  return { status: response.status, text, json: JSON.parse(text) };
}

describe("the gateway's own _entities fetches", () => {
  it('carry a full page of 100 courses in one fetch, inside the cap, and answer', async () => {
    const answer = await graphql(`{ courses(first: ${COURSES}) { edges { node { courseId aiProvenance { provenanceId } } } } }`);
    expect(answer.status, answer.text.slice(0, 600)).toBe(200);
    expect(answer.json.errors, answer.text.slice(0, 600)).toBeUndefined();
    expect(answer.json.data.courses.edges).toHaveLength(COURSES);
    expect(aiRelay.representations).toEqual([COURSES]);
  });

  it('send each course once when the page repeats it per version (600 planned, 60 sent), and answer every position', async () => {
    const page = 60;
    const answer = await graphql(
      `{ courses(first: ${page}) { edges { node { courseId versions { courseVersionId course { courseId aiProvenance { provenanceId } } } } } } }`,
    );
    expect(answer.status, answer.text.slice(0, 600)).toBe(200);
    expect(answer.json.errors, answer.text.slice(0, 600)).toBeUndefined();
    const edges = answer.json.data.courses.edges as Array<{
      node: { courseId: string; versions: Array<{ course: { courseId: string; aiProvenance: unknown[] } }> };
    }>;
    expect(edges).toHaveLength(page);
    for (const { node } of edges) {
      expect(node.versions).toHaveLength(VERSIONS);
      for (const version of node.versions) expect(version.course).toEqual({ courseId: node.courseId, aiProvenance: [] });
    }
    expect(aiRelay.representations).toEqual([page]);
  });
});
