import { buildSchema, parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { checkLimits, measureOperation } from '../../../gateway/limits.js';

const schema = buildSchema(`
  type Query {
    courses(first: Int, after: String): CourseConnection!
    course(id: ID!): Course
    tags(limit: Int): [String!]!
    node: Node
  }
  interface Node { id: ID! }
  type CourseConnection { edges: [CourseEdge!]! pageInfo: PageInfo! }
  type PageInfo { hasNextPage: Boolean! }
  type CourseEdge { node: Course! }
  type Course implements Node { id: ID! title: String versions: [Version!]! parent: Course }
  type Version { id: ID! label: String }
`);

function measure(query: string, variables?: Record<string, unknown>) {
  const document = parse(query);
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')!;
  return measureOperation(schema, document, operation, variables, 10);
}

describe('measureOperation', () => {
  it('counts depth by nested selections, fragments inlined', () => {
    expect(measure('{ course(id: "1") { id } }').depth).toBe(2);
    expect(measure('{ course(id: "1") { parent { parent { parent { id } } } } }').depth).toBe(5);
    expect(measure('query { course(id: "1") { ...F } } fragment F on Course { parent { id } }').depth).toBe(3);
    expect(measure('{ node { ... on Course { parent { id } } } }').depth).toBe(3);
  });

  it('leaves introspection free, so schema explorers are never refused', () => {
    const introspection =
      '{ __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } } }';
    expect(measure(introspection)).toEqual({ depth: 0, cost: 0 });
    expect(measure('{ __typename course(id: "1") { __typename id } }')).toEqual({ depth: 2, cost: 2 });
  });

  it('multiplies by the size a connection field asks for, applied to the list below it', () => {
    // courses(1) + 5 edges x (edge 1 + node 1 + id 1) = 16; pageInfo 1 + hasNextPage 1.
    expect(measure('{ courses(first: 5) { edges { node { id } } pageInfo { hasNextPage } } }').cost).toBe(1 + 5 * 3 + 2);
    expect(measure('query Q($n: Int) { courses(first: $n) { edges { node { id } } } }', { n: 50 }).cost).toBe(1 + 50 * 3);
  });

  it('uses the default list size where nothing bounds a list, and limit on list fields', () => {
    expect(measure('{ tags }').cost).toBe(10);
    expect(measure('{ tags(limit: 3) }').cost).toBe(3);
    // Nested unbounded lists multiply: 5 courses x 10 versions x (version 1 + label 1).
    expect(measure('{ courses(first: 5) { edges { node { versions { label } } } } }').cost).toBe(1 + 5 * (1 + 1 + 10 * 2));
  });
});

describe('checkLimits', () => {
  const limits = { maxDepth: 3, maxCost: 100, defaultListSize: 10 };

  it('refuses a deep operation with QUERY_TOO_DEEP and a costly one with QUERY_TOO_COSTLY, both 400', () => {
    const deep = checkLimits({ depth: 4, cost: 1 }, limits);
    expect(deep).toMatchObject({ code: 'QUERY_TOO_DEEP', status: 400, details: { depth: 4, maxDepth: 3 } });
    const costly = checkLimits({ depth: 2, cost: 101 }, limits);
    expect(costly).toMatchObject({ code: 'QUERY_TOO_COSTLY', status: 400, details: { cost: 101, maxCost: 100 } });
  });

  it('lets an operation at the limits through', () => {
    expect(checkLimits({ depth: 3, cost: 100 }, limits)).toBeUndefined();
  });
});
