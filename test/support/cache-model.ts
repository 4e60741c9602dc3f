import { randomUUID } from 'node:crypto';
import { ApolloServer } from '@apollo/server';
import fc from 'fast-check';
import { buildSchema, execute, parse, type GraphQLSchema } from 'graphql';
import type { GatewayContext } from '../../gateway/forwarding.js';
import { responseCachePlugin } from '../../gateway/response-cache/plugin.js';
import type { ResponseCache } from '../../gateway/response-cache/response-cache.js';
import { eventTags, type CatalogEventFacts } from '../../gateway/response-cache/cache-policy.logic.js';

/**
 * A small catalog for generative tests of the gateway's response cache: the catalog's read types
 * under their real names (a subset of their fields), data in memory, and the changes the catalog
 * makes with the event it publishes for each (the shape eventTags reads). An Apollo server runs
 * the response cache plugin over it, as the gateway does over the supergraph; `fresh` answers
 * without any cache, so a served answer that differs from it is stale.
 */
export const MODEL_SDL = `
  type Query {
    course(courseId: ID!): Course
    courses(first: Int): CourseConnection!
    courseVersion(courseVersionId: ID!): CourseVersion
    courseVersions(courseId: ID!): [CourseVersion!]!
  }
  type Mutation {
    updateCourseMetadata(courseId: ID!, title: String!): Course
    deprecateCourseVersion(courseVersionId: ID!): CourseVersion
  }
  type CourseConnection { edges: [CourseEdge!]! count: Int! }
  type CourseEdge { cursor: String! node: Course! }
  type Course {
    courseId: ID!
    slug: String!
    title: String!
    authors: [CourseAuthor!]!
    versions: [CourseVersion!]!
    latestVersionLabel: String
  }
  type CourseAuthor { userId: String! displayName: String! }
  type CourseVersion {
    courseVersionId: ID!
    courseId: String!
    versionLabel: String!
    publishedBy: String!
    state: String!
    course: Course
  }
`;

export const COURSE_IDS = ['c1', 'c2', 'c3', 'c4'];
export const VERSION_IDS = ['v1', 'v2', 'v3', 'v4', 'v5'];

interface CourseRow {
  courseId: string;
  slug: string;
  title: string;
  authors: Array<{ userId: string; displayName: string }>;
  versionIds: string[];
}
interface VersionRow {
  courseVersionId: string;
  courseId: string;
  versionLabel: string;
  publishedBy: string;
  state: string;
}

export type Change =
  | { kind: 'retitle'; course: number; title: string }
  | { kind: 'renameAuthor'; course: number; name: string }
  | { kind: 'publish'; course: number }
  | { kind: 'deprecate'; version: number }
  | { kind: 'erasePublisher'; version: number }
  | { kind: 'register'; course: number };

export const changeArbitrary: fc.Arbitrary<Change> = fc.oneof(
  fc.record({ kind: fc.constant('retitle' as const), course: fc.nat(), title: fc.string({ minLength: 1, maxLength: 5 }) }),
  fc.record({ kind: fc.constant('renameAuthor' as const), course: fc.nat(), name: fc.string({ minLength: 1, maxLength: 5 }) }),
  fc.record({ kind: fc.constant('publish' as const), course: fc.nat() }),
  fc.record({ kind: fc.constant('register' as const), course: fc.nat() }),
  fc.record({ kind: fc.constant('deprecate' as const), version: fc.nat() }),
  fc.record({ kind: fc.constant('erasePublisher' as const), version: fc.nat() }),
);

export class CatalogModel {
  readonly courses = new Map<string, CourseRow>();
  readonly versions = new Map<string, VersionRow>();
  private published = 0;
  /** How many times `course` was resolved (a subgraph fetch in the gateway). */
  courseFetches = 0;
  /** `course` answers once this settles: a test holds fetches in flight with it. */
  gate: Promise<void> = Promise.resolve();

  /** A tenant of its own per model: runs sharing a cache Redis never meet each other's entries. */
  constructor(readonly tenant = `ten_model_${randomUUID()}`) {
    // c1 with two versions, c2 with one, c3 with none; c4 is registered later (a null answer first).
    this.addCourse('c1');
    this.addCourse('c2');
    this.addCourse('c3');
    this.addVersion('c1', 'v1');
    this.addVersion('c1', 'v2');
    this.addVersion('c2', 'v3');
  }

  /** Applies a change as the catalog would; returns the event it publishes. */
  apply(change: Change): CatalogEventFacts {
    const courseId = 'course' in change ? COURSE_IDS[change.course % COURSE_IDS.length] : '';
    const course = this.courses.get(courseId);
    switch (change.kind) {
      case 'retitle':
        if (course) course.title = change.title;
        return this.event('catalog.course.metadata_updated', courseId);
      case 'renameAuthor':
        if (course) course.authors[0].displayName = change.name;
        return this.event('catalog.course.metadata_updated', courseId);
      case 'publish': {
        const versionId = `vp${++this.published}`;
        if (course) this.addVersion(courseId, versionId);
        return this.event('catalog.course_version.published', courseId, versionId);
      }
      case 'register':
        if (!course) this.addCourse(courseId);
        return this.event('catalog.course.registered', courseId);
      case 'deprecate':
      case 'erasePublisher': {
        const version = [...this.versions.values()][change.version % this.versions.size];
        if (change.kind === 'deprecate') version.state = 'DEPRECATED';
        else version.publishedBy = 'erased';
        return this.event('catalog.course_version.deprecated', version.courseId, version.courseVersionId);
      }
    }
  }

  rootValue(): Record<string, unknown> {
    const ordered = () => [...this.courses.values()].sort((a, b) => a.courseId.localeCompare(b.courseId));
    return {
      course: async ({ courseId }: { courseId: string }) => {
        this.courseFetches++;
        await this.gate;
        return this.courseView(courseId);
      },
      courses: () => ({
        edges: ordered().map((c) => ({ cursor: c.courseId, node: this.courseView(c.courseId) })),
        count: this.courses.size,
      }),
      courseVersion: ({ courseVersionId }: { courseVersionId: string }) => this.versionView(courseVersionId),
      courseVersions: ({ courseId }: { courseId: string }) =>
        (this.courses.get(courseId)?.versionIds ?? []).map((id) => this.versionView(id)),
      updateCourseMetadata: ({ courseId, title }: { courseId: string; title: string }, context: GatewayContext) => {
        if (!context.principal.scopes.has('catalog.write')) throw new Error('auth.forbidden');
        const course = this.courses.get(courseId);
        if (!course) throw new Error('course.not_found');
        course.title = title;
        return this.courseView(courseId);
      },
      deprecateCourseVersion: ({ courseVersionId }: { courseVersionId: string }, context: GatewayContext) => {
        if (!context.principal.scopes.has('catalog.write')) throw new Error('auth.forbidden');
        const version = this.versions.get(courseVersionId);
        if (!version) throw new Error('course_version.not_found');
        version.state = 'DEPRECATED';
        return this.versionView(courseVersionId);
      },
    };
  }

  private courseView(courseId: string): unknown {
    const row = this.courses.get(courseId);
    if (!row) return null;
    return {
      ...row,
      authors: row.authors.map((a) => ({ ...a })),
      versions: () => row.versionIds.map((id) => this.versionView(id)),
      // Depends on the versions' states: a version mutation changes its course's answer too.
      latestVersionLabel: () =>
        row.versionIds
          .map((id) => this.versions.get(id))
          .filter((v) => v !== undefined && v.state !== 'DEPRECATED')
          .at(-1)?.versionLabel ?? null,
    };
  }

  private versionView(versionId: string): unknown {
    const row = this.versions.get(versionId);
    if (!row) return null;
    return { ...row, course: () => this.courseView(row.courseId) };
  }

  private event(eventType: string, courseId: string, courseVersionId?: string): CatalogEventFacts {
    return {
      eventType,
      tenantId: this.tenant,
      partitionKey: courseId,
      payload: { courseId, ...(courseVersionId ? { courseVersionId } : {}) },
    };
  }

  private addCourse(courseId: string): void {
    this.courses.set(courseId, {
      courseId,
      slug: `slug-${courseId}`,
      title: `Title ${courseId}`,
      authors: [{ userId: `u-${courseId}`, displayName: `Author ${courseId}` }],
      versionIds: [],
    });
  }

  private addVersion(courseId: string, courseVersionId: string): void {
    const course = this.courses.get(courseId)!;
    course.versionIds.push(courseVersionId);
    this.versions.set(courseVersionId, {
      courseVersionId,
      courseId,
      versionLabel: `1.${course.versionIds.length}`,
      publishedBy: `publisher-${courseId}`,
      state: 'PUBLISHED',
    });
  }
}

export const modelSchema: GraphQLSchema = buildSchema(MODEL_SDL);

/** The answer without any cache, as JSON text. */
export async function freshAnswer(model: CatalogModel, query: string, variables: Record<string, unknown>): Promise<string> {
  const result = await execute({
    schema: modelSchema,
    document: parse(query),
    rootValue: model.rootValue(),
    variableValues: variables,
  });
  return JSON.stringify({ data: result.data ?? null, errors: result.errors?.map((e) => e.message) });
}

/** An Apollo server over the model (the one `model` returns now) with the response cache plugin: one gateway replica. */
export async function modelServer(model: () => CatalogModel, cache: ResponseCache): Promise<ModelServer> {
  const server = new ApolloServer<GatewayContext>({
    schema: modelSchema,
    rootValue: () => model().rootValue(),
    plugins: [responseCachePlugin(cache, new Set())],
  });
  await server.start();
  return new ModelServer(server, model);
}

export class ModelServer {
  constructor(
    private readonly server: ApolloServer<GatewayContext>,
    private readonly model: () => CatalogModel,
  ) {}

  /** The answer as this replica serves it (from its cache or not), as JSON text, and its HTTP status. */
  async answer(
    query: string,
    variables: Record<string, unknown>,
    scopes: readonly string[] = ['catalog.read'],
  ): Promise<{ text: string; status: number | undefined }> {
    const response = await this.server.executeOperation(
      { query, variables },
      {
        contextValue: {
          principal: { subject: 'u1', tenantId: this.model().tenant, scopes: new Set(scopes), token: 't' },
          requestId: 'r1',
          forward: {},
          idempotencyChecked: true,
          trustedOperation: false,
        },
      },
    );
    if (response.body.kind !== 'single') throw new Error('expected a single result');
    const result = response.body.singleResult;
    const text = JSON.stringify({ data: result.data ?? null, errors: result.errors?.map((e) => e.message) });
    return { text, status: response.http.status };
  }

  stop(): Promise<void> {
    return this.server.stop();
  }
}

/** One gateway replica over the model: its cache and its Apollo server. */
export interface ModelReplica {
  cache: ResponseCache;
  server: ModelServer;
}

/**
 * The generative check of the cache's dependencies: reads are cached (each on every replica, so
 * each replica holds them in L1 and, with a cache Redis, they are shared through L2), the catalog
 * changes, every replica follows the events, and then no replica serves an answer that differs
 * from a fresh one. `fresh()` starts each run with a new model (and tenant).
 */
export async function checkNoStaleAnswer(
  replicas: readonly ModelReplica[],
  fresh: () => CatalogModel,
  reads: ReadonlyArray<{ query: string; variables: Record<string, unknown> }>,
  changes: readonly Change[],
): Promise<void> {
  const model = fresh();
  for (const { cache } of replicas) cache.clearLocal();
  for (const read of reads) {
    for (const { server } of replicas) {
      const answer = (await server.answer(read.query, read.variables)).text;
      // A generator bug (an invalid document) must not pass as "nothing cached".
      if (answer.includes('"errors"')) throw new Error(`the document was refused: ${answer}\n${read.query}`);
      // Asked again: a hit where the answer was cacheable, and the same answer.
      if ((await server.answer(read.query, read.variables)).text !== answer)
        throw new Error(`a second read differs\n${read.query}`);
    }
  }
  for (const change of changes) {
    const tags = eventTags(model.apply(change));
    for (const { cache } of replicas) await cache.invalidate(tags, 'event');
  }
  for (const read of reads) {
    const expected = await freshAnswer(model, read.query, read.variables);
    for (const [i, { server }] of replicas.entries()) {
      const served = (await server.answer(read.query, read.variables)).text;
      if (served !== expected) throw new Error(`replica ${i} served ${served}, fresh is ${expected}\n${read.query}`);
    }
  }
}

/** A write through the gateway's mutation, with one of the selections a client may make. */
export interface Write {
  query: string;
  variables: Record<string, unknown>;
}

const COURSE_WRITE_SELECTIONS = ['{ courseId }', '{ title }', '{ courseId title latestVersionLabel }', '{ versions { state } }'];
const VERSION_WRITE_SELECTIONS = ['{ courseVersionId }', '{ courseVersionId courseId }', '{ state }', '{ course { title } }'];

export const writeArbitrary: fc.Arbitrary<Write> = fc.oneof(
  fc
    .record({
      course: fc.constantFrom('c1', 'c2', 'c3'),
      title: fc.string({ minLength: 1, maxLength: 5 }),
      selection: fc.constantFrom(...COURSE_WRITE_SELECTIONS),
    })
    .map(({ course, title, selection }) => ({
      query: `mutation W($id: ID!, $t: String!) { updateCourseMetadata(courseId: $id, title: $t) ${selection} }`,
      variables: { id: course, t: title },
    })),
  fc
    .record({
      version: fc.constantFrom('v1', 'v2', 'v3'),
      selection: fc.constantFrom(...VERSION_WRITE_SELECTIONS),
      literal: fc.boolean(),
    })
    .map(({ version, selection, literal }) =>
      literal
        ? { query: `mutation { deprecateCourseVersion(courseVersionId: "${version}") ${selection} }`, variables: {} }
        : {
            query: `mutation W($v: ID!) { deprecateCourseVersion(courseVersionId: $v) ${selection} }`,
            variables: { v: version },
          },
    ),
);

/**
 * Read-your-writes, generatively: reads are cached, then the writer changes the catalog through
 * the gateway's mutations and no event is followed (it has not arrived yet); no read may then be
 * served an answer that differs from a fresh one. A write that dropped less than it changed fails.
 */
export async function checkReadsOwnWrites(
  replica: ModelReplica,
  fresh: () => CatalogModel,
  reads: ReadonlyArray<{ query: string; variables: Record<string, unknown> }>,
  writes: readonly Write[],
): Promise<void> {
  const model = fresh();
  replica.cache.clearLocal();
  for (const read of reads) {
    const answer = (await replica.server.answer(read.query, read.variables)).text;
    if (answer.includes('"errors"')) throw new Error(`the document was refused: ${answer}\n${read.query}`);
  }
  for (const write of writes) {
    const answer = (await replica.server.answer(write.query, write.variables, ['catalog.write'])).text;
    if (answer.includes('"errors"')) throw new Error(`the write was refused: ${answer}\n${write.query}`);
  }
  for (const read of reads) {
    const expected = await freshAnswer(model, read.query, read.variables);
    const served = (await replica.server.answer(read.query, read.variables)).text;
    if (served !== expected)
      throw new Error(`served ${served}, fresh is ${expected}\n${read.query}\nafter ${JSON.stringify(writes)}`);
  }
}
