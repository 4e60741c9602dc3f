import type { BaseContext } from '@apollo/server';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { compileQuery } from 'graphql-jit';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSystemConfig } from '../../../processes/config.js';
import { notFound } from '../../../platform/errors/errors.js';
import { createDoorServer } from '../../../platform/graphql/apollo-server.js';
import { compiledQueryExecution, type CompiledExecutionOptions } from '../../../platform/graphql/compiled-execution.js';
import { silentLogger } from '../../../platform/observability/logger.js';

const schema = makeExecutableSchema({
  typeDefs: `
    type Query { course(id: ID!): Course, page(first: Int!): [Course!]!, broken: Course! }
    type Course { id: ID!, title: String!, missing: String! }
    type Mutation { touch(id: ID!): Course }`,
  resolvers: {
    Query: {
      course: (_: unknown, { id }: { id: string }) => {
        if (id === 'gone') throw notFound('Course');
        return { id, title: `Course ${id}` };
      },
      page: (_: unknown, { first }: { first: number }) =>
        Array.from({ length: first }, (_, i) => ({ id: String(i), title: `Course ${i}` })),
      broken: () => null,
    },
    Mutation: { touch: (_: unknown, { id }: { id: string }) => ({ id, title: 'touched' }) },
  },
});

type Execution = 'compiled' | 'graphql-js';
const servers: Array<{ stop(): Promise<void> }> = [];

async function door(execution: Execution, options: CompiledExecutionOptions = {}) {
  const server = createDoorServer<BaseContext>({
    name: 'test',
    graph: execution === 'compiled' ? { gateway: compiledQueryExecution(schema, options) } : { schema },
    logger: silentLogger,
    metrics: undefined,
    limits: loadSystemConfig({}).ops.limits,
    plugins: { first: [], last: [] },
  });
  await server.start();
  servers.push(server);
  return async (query: string, variables?: Record<string, unknown>) => {
    const response = await server.executeOperation({ query, variables });
    if (response.body.kind !== 'single') throw new Error('expected a single result');
    return { status: response.http.status ?? 200, body: response.body.singleResult };
  };
}

/** graphql-jit's compiler, counting the documents it is asked to compile. */
function countingCompiler() {
  const compiled: string[] = [];
  const compile: typeof compileQuery = (...args) => {
    compiled.push(args[2] ?? '(unnamed)');
    return compileQuery(...args);
  };
  return { compile, compiled };
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

describe('compiled query execution (a subgraph door)', () => {
  const cases: Array<[string, string, Record<string, unknown>?]> = [
    ['a page', 'query Page($n: Int!) { page(first: $n) { id title __typename } }', { n: 3 }],
    ['a resolver error with its stable code', '{ course(id: "gone") { id } }'],
    ['a null in a non-null field, bubbling to the root', '{ broken { id } }'],
    ['a variable that does not coerce (400)', 'query Page($n: Int!) { page(first: $n) { id } }', { n: 'three' }],
    ['a missing required variable (400)', 'query Page($n: Int!) { page(first: $n) { id } }', {}],
    ['aliases and a fragment', '{ a: course(id: "1") { ...C } b: course(id: "2") { ...C } } fragment C on Course { id title }'],
    ['@include by a variable', 'query($t: Boolean!) { course(id: "1") { id title @include(if: $t) } }', { t: false }],
    ['introspection', '{ __type(name: "Course") { name fields { name } } }'],
    ['a mutation', 'mutation { touch(id: "7") { id title } }'],
  ];

  it.each(cases)('%s: answers exactly what graphql-js answers', async (_name, query, variables) => {
    const compiled = await door('compiled');
    const interpreted = await door('graphql-js');
    const ours = await compiled(query, variables);
    const reference = await interpreted(query, variables);
    expect(ours).toEqual(reference);
  });

  it('keeps a resolver error’s code and status: graphql-jit’s own errors carry no extensions, which Apollo reads', async () => {
    const compiled = await door('compiled');
    const answer = await compiled('{ course(id: "gone") { id } }');
    expect(answer.body.errors?.[0]).toMatchObject({
      message: 'Course not found',
      path: ['course'],
      locations: [{ line: 1, column: 3 }],
      extensions: { code: 'request.not_found' },
    });
    expect(answer.body.data).toEqual({ course: null });
  });

  it('answers a variable that does not coerce as the caller’s mistake (400 BAD_USER_INPUT)', async () => {
    const compiled = await door('compiled');
    const answer = await compiled('query Page($n: Int!) { page(first: $n) { id } }', { n: 'three' });
    expect(answer.status).toBe(400);
    expect(answer.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('compiles each query document once, and never a mutation', async () => {
    const { compile, compiled: asked } = countingCompiler();
    const compiled = await door('compiled', { compile });
    for (const n of [1, 2, 3]) await compiled('query Page($n: Int!) { page(first: $n) { id } }', { n });
    await compiled('query One { course(id: "1") { id } }');
    await compiled('mutation { touch(id: "1") { id } }');
    expect(asked).toEqual(['Page', 'One']);
  });

  it('keeps at most maxDocuments compiled, the least recently used dropped first', async () => {
    const { compile, compiled: asked } = countingCompiler();
    const compiled = await door('compiled', { compile, maxDocuments: 2 });
    const doc = (name: string) => `query ${name} { course(id: "1") { id } }`;
    for (const name of ['A', 'B', 'A', 'C', 'A', 'B']) await compiled(doc(name));
    // A stays (used again before C came); B was the least recently used when C came, so it is compiled again.
    expect(asked).toEqual(['A', 'B', 'C', 'B']);
  });
});
