import fc from 'fast-check';
import { buildSchema, parse, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { OperationMeasures } from '../../../platform/graphql/operation-measures.js';
import { operationCost, representationCount, type CostOptions } from '../../../platform/graphql/query-cost.js';

const SDL = `
  type Query {
    courses(first: Int, after: String): CourseConnection!
    course(id: ID!): Course
    tags(limit: Int): [String!]!
    history(first: Int = 50): [Version!]!
    _entities(representations: [_Any!]!): [_Entity]!
  }
  scalar _Any
  union _Entity = Course | Version
  type CourseConnection { edges: [CourseEdge!]! }
  type CourseEdge { node: Course! }
  type Course { id: ID! title: String versions(first: Int): [Version!]! }
  type Version { id: ID! label: String }
`;

const OPTIONS: CostOptions = { defaultListSize: 10, maxCost: 1e9, fieldCosts: { 'Query.tags': 7 } };

/** Documents whose cost reads variables in each way the walk can: sizes, nested sizes in fragments, representations. */
const DOCUMENTS = [
  'query Q($n: Int, $id: ID!) { courses(first: $n) { edges { node { id title } } } course(id: $id) { id } }',
  'query Q($n: Int, $m: Int) { courses(first: $n) { edges { node { ...V } } } } fragment V on Course { versions(first: $m) { label } }',
  'query Q($n: Int, $m: Int) { tags(limit: $n) history(first: $m) { label } a: history { id } }',
  'query E($r: [_Any!]!) { _entities(representations: $r) { ... on Course { id versions { id } } } }',
  'query E($r: [_Any!]!, $n: Int) { ...F } fragment F on Query { _entities(representations: $r) { ... on Course { id } } tags(limit: $n) }',
  'query L($a: _Any!) { _entities(representations: [$a, $a]) { ... on Version { label } } }',
];

function operationOf(document: DocumentNode): OperationDefinitionNode {
  return document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')!;
}

/** The schema with its root lookups counted: operationCost asks for the root type once per walk. */
function countingSchema(schema: GraphQLSchema): { schema: GraphQLSchema; walks: () => number } {
  let walks = 0;
  const counted = Object.create(schema) as GraphQLSchema;
  counted.getRootType = (operation) => {
    walks += 1;
    return schema.getRootType(operation);
  };
  return { schema: counted, walks: () => walks };
}

const sizeValue = fc.oneof(fc.integer({ min: 0, max: 40 }), fc.constant(null), fc.constant(undefined), fc.constant('5'));
const representationsValue = fc.oneof(
  fc.array(fc.record({ __typename: fc.constant('Course'), id: fc.string() }), { maxLength: 6 }),
  fc.constant(null),
  fc.record({ __typename: fc.constant('Course'), id: fc.string() }),
);
const variablesValue = fc.record(
  { n: sizeValue, m: sizeValue, id: fc.string(), r: representationsValue, a: fc.constant({ __typename: 'Version' }) },
  { requiredKeys: [] },
);

describe('operation measures kept per document', () => {
  it('answer what a fresh walk answers, for any sequence of variables on the same parsed documents', () => {
    const schema = buildSchema(SDL);
    const documents = DOCUMENTS.map((text) => parse(text));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(DOCUMENTS.length - 1), variablesValue), { minLength: 1, maxLength: 40 }),
        (requests) => {
          const measures = new OperationMeasures(OPTIONS);
          for (const [index, variables] of requests) {
            const document = documents[index];
            const operation = operationOf(document);
            expect(measures.of(schema, document, operation, variables).cost()).toBe(
              operationCost(schema, document, operation, variables, OPTIONS),
            );
            expect(measures.of(schema, document, operation, variables).representations()).toBe(
              representationCount(document, operation, variables),
            );
          }
        },
      ),
      { seed: 20261129, numRuns: 300 },
    );
  });

  it('walk a document once per value of the variables they read, whatever the other variables hold', () => {
    const { schema, walks } = countingSchema(buildSchema(SDL));
    const measures = new OperationMeasures(OPTIONS);
    const document = parse(DOCUMENTS[0]);
    const operation = operationOf(document);
    const first = measures.of(schema, document, operation, { n: 5, id: 'crs_1' }).cost();
    expect(measures.of(schema, document, operation, { n: 5, id: 'crs_2' }).cost()).toBe(first);
    expect(walks()).toBe(1);
    // One more course: its edge, node, id and title.
    expect(measures.of(schema, document, operation, { n: 6, id: 'crs_1' }).cost()).toBe(first + 4);
    expect(walks()).toBe(2);
  });

  it('walk an operation that introspects every time, and measure again under a new schema', () => {
    const { schema, walks } = countingSchema(buildSchema(SDL));
    const measures = new OperationMeasures(OPTIONS);
    const introspecting = parse('query I($n: Int) { __type(name: "Course") { name fields { name } } tags(limit: $n) }');
    measures.of(schema, introspecting, operationOf(introspecting), { n: 1 }).cost();
    measures.of(schema, introspecting, operationOf(introspecting), { n: 1 }).cost();
    expect(walks()).toBe(2);

    const document = parse(DOCUMENTS[2]);
    const operation = operationOf(document);
    const before = measures.of(schema, document, operation, { n: 1, m: 1 }).cost();
    const shorter = buildSchema(SDL.replace('history(first: Int = 50)', 'history(first: Int = 3)'));
    const after = measures.of(shorter, document, operation, { n: 1, m: 1 }).cost();
    expect(after).toBe(operationCost(shorter, document, operation, { n: 1, m: 1 }, OPTIONS));
    expect(after).toBe(before - (50 - 3) * 2);
  });
});
