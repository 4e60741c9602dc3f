import fc from 'fast-check';
import { buildSchema, getIntrospectionQuery, parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { operationCost, representationCount } from '../../../platform/graphql/query-cost.js';

const schema = buildSchema(`
  type Query {
    courses(first: Int, after: String): CourseConnection!
    course(id: ID!): Course
    tags(limit: Int): [String!]!
    node: Node
    parity(feature: String!): Parity!
    history(first: Int = 50): [Version!]!
    _entities(representations: [_Any!]!): [_Entity]!
  }
  scalar _Any
  union _Entity = Course | Version
  type Parity { ratio: Float holds: Boolean! }
  interface Node { id: ID! }
  type CourseConnection { edges: [CourseEdge!]! pageInfo: PageInfo! }
  type PageInfo { hasNextPage: Boolean! }
  type CourseEdge { node: Course! }
  type Course implements Node { id: ID! title: String versions: [Version!]! parent: Course }
  type Version { id: ID! label: String }
`);

function cost(query: string, variables?: Record<string, unknown>, maxCost = 1e9, fieldCosts?: Record<string, number>) {
  const document = parse(query);
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')!;
  return operationCost(schema, document, operation, variables, { defaultListSize: 10, maxCost, fieldCosts });
}

function representations(query: string, variables?: Record<string, unknown>) {
  const document = parse(query);
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')!;
  return representationCount(document, operation, variables);
}

/** `depth` fragments, each spreading the next one `fanOut` times: 2 KB that names fanOut^depth fields. */
function fragmentBomb(depth: number, fanOut: number, leaf = '__typename'): string {
  const fragments = Array.from(
    { length: depth },
    (_, i) => `fragment F${i} on Query { ${Array.from({ length: fanOut }, () => `...F${i + 1}`).join(' ')} }`,
  );
  return `query { ...F0 } ${fragments.join(' ')} fragment F${depth} on Query { ${leaf} }`;
}

describe('operationCost', () => {
  it('multiplies by the size a connection field asks for, applied to the list below it', () => {
    // courses(1) + 5 edges x (edge 1 + node 1 + id 1) = 16; pageInfo 1 + hasNextPage 1.
    expect(cost('{ courses(first: 5) { edges { node { id } } pageInfo { hasNextPage } } }')).toBe(1 + 5 * 3 + 2);
    expect(cost('query Q($n: Int) { courses(first: $n) { edges { node { id } } } }', { n: 50 })).toBe(1 + 50 * 3);
  });

  it('uses the default list size where nothing bounds a list, and limit on list fields', () => {
    expect(cost('{ tags }')).toBe(10);
    expect(cost('{ tags(limit: 3) }')).toBe(3);
    // Nested unbounded lists multiply: 5 courses x 10 versions x (version 1 + label 1).
    expect(cost('{ courses(first: 5) { edges { node { versions { label } } } } }')).toBe(1 + 5 * (1 + 1 + 10 * 2));
  });

  it('counts a fragment like the fields it stands for, wherever it is spread', () => {
    const inline = cost('{ courses(first: 5) { edges { node { id title versions { label } } } } }');
    const spread = cost(
      'query { courses(first: 5) { edges { node { ...C } } } } fragment C on Course { id title versions { label } }',
    );
    expect(spread).toBe(inline);
    expect(cost('{ node { ... on Course { parent { id } } } }')).toBe(3);
  });

  it('counts introspection like any other field, as many values as its answer holds', () => {
    // __schema 1 + queryType 1 + name 1.
    expect(cost('{ __schema { queryType { name } } }')).toBe(3);
    expect(cost('{ __typename }')).toBe(1);
    const full = cost(getIntrospectionQuery());
    expect(full).toBeGreaterThan(100);
    // Two full introspections cost twice one: aliases multiply work, and the count sees it.
    expect(cost(`{ a: __schema { types { name } } b: __schema { types { name } } }`)).toBe(
      2 * cost('{ __schema { types { name } } }'),
    );
  });

  it('stops counting introspection past the limit, however many aliases ask for it', () => {
    const thousand = `{ ${Array.from({ length: 1000 }, (_, i) => `a${i}: __schema { types { fields { args { name } } } }`).join(' ')} }`;
    expect(cost(thousand, undefined, 500)).toBe(501);
  });

  it('measures a 49-level fragment document (2^49 spreads) without walking it', () => {
    const started = performance.now();
    expect(cost(fragmentBomb(49, 2))).toBeGreaterThan(1e12 - 1);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('measures any nest of fragments up to a megabyte in time linear in its size', () => {
    // Generous bound: it fails on a walk that revisits spreads (seconds at depth 20, never at 49).
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 1, max: 8 }),
        fc.constantFrom('__typename', 'course(id: "1") { id parent { id } }', 'courses(first: 3) { edges { node { id } } }'),
        (depth, fanOut, leaf) => {
          const document = fragmentBomb(depth, fanOut, leaf);
          fc.pre(document.length <= 1024 * 1024);
          const started = performance.now();
          const measured = cost(document);
          expect(measured).toBeGreaterThan(0);
          expect(performance.now() - started).toBeLessThan(1_000);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('counts a costly field its weight per resolution, so aliases of it add up (issue #24: 29 aliased scans)', () => {
    const costs = { 'Query.parity': 5_000, 'Query.tags': 50 };
    expect(cost('{ parity(feature: "a") { ratio holds } }', undefined, 1e9, costs)).toBe(5_000 + 2);
    const aliased = `{ ${Array.from({ length: 29 }, (_, i) => `p${i}: parity(feature: "a") { ratio }`).join(' ')} }`;
    expect(cost(aliased, undefined, 1e9, costs)).toBe(29 * 5_001);
    expect(cost(aliased)).toBe(29 * 2);
    // A costly list field: its weight once, then its items as any list.
    expect(cost('{ tags }', undefined, 1e9, costs)).toBe(49 + 10);
    expect(cost('{ tags(limit: 3) }', undefined, 1e9, costs)).toBe(49 + 3);
  });

  it("sizes _entities by its representations, from a literal or a variable (not as an unbounded list's 10)", () => {
    const query = 'query E($r: [_Any!]!) { _entities(representations: $r) { ... on Course { id title } } }';
    const many = Array.from({ length: 10_000 }, (_, i) => ({ __typename: 'Course', id: String(i) }));
    expect(cost(query, { r: many })).toBe(10_000 * 3);
    expect(cost(query, { r: many.slice(0, 2) })).toBe(2 * 3);
    expect(cost('{ _entities(representations: [{ __typename: "Course", id: "1" }]) { ... on Course { id } } }')).toBe(2);
    expect(cost(query, {})).toBe(0);
  });

  it("takes a size argument's default from the schema when the document leaves it out", () => {
    expect(cost('{ history { label } }')).toBe(50 * 2);
    expect(cost('{ history(first: 5) { label } }')).toBe(5 * 2);
  });

  it('counts the representations of every _entities field, each field once however often it is spread', () => {
    const r = [
      { __typename: 'Course', id: '1' },
      { __typename: 'Course', id: '2' },
    ];
    expect(
      representations(
        'query E($r: [_Any!]!) { a: _entities(representations: $r) { __typename } b: _entities(representations: $r) { __typename } }',
        { r },
      ),
    ).toBe(4);
    expect(
      representations(
        'query E($r: [_Any!]!) { ...F ...F ... on Query { ...F } } fragment F on Query { _entities(representations: $r) { __typename } }',
        { r },
      ),
    ).toBe(2);
    expect(representations('{ courses(first: 1) { edges { node { id } } } }')).toBe(0);
  });
});
