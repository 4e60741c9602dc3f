import { createRequire } from 'node:module';
import fs from 'node:fs';
import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import type { NamedType, Operation, Type } from '@apollo/federation-internals';
import { buildOperationContext, executeQueryPlan } from '@apollo/gateway';
import { seededRandom } from '../../support/seeded-random.js';
import {
  computeResponse,
  useResultShaping,
  type ShapingInput,
  type ShapingOutput,
} from '../../../gateway/result-shaping/result-shaping.js';

// Our result shaping must answer exactly what Apollo Gateway's does (gateway/result-shaping/result-shaping.ts):
// both run on the same operations and inputs — written cases, then seeded random inputs with
// nulls, missing fields, values of the wrong type and unknown typenames — and their answers are
// compared: data with its key order and prototypes, errors with messages, paths and codes, and the
// asserts either throws.
const gatewayRequire = createRequire(createRequire(import.meta.url).resolve('@apollo/gateway'));
const fi = gatewayRequire('@apollo/federation-internals') as typeof import('@apollo/federation-internals');
const apolloModule = gatewayRequire('@apollo/gateway/dist/resultShaping.js') as { computeResponse: typeof computeResponse };
/** Apollo's own, taken before anything in this file may install ours. */
const apollo = { computeResponse: apolloModule.computeResponse };

const SDL = `
  scalar JSON
  enum Color { RED GREEN }
  interface Node { id: ID! }
  type Course implements Node {
    id: ID! title: String count: Int! ratio: Float flag: Boolean color: Color meta: JSON tags: [String!]
    versions: [Version!]! related: [Course] owner: Owner
  }
  type Version implements Node { id: ID! label: String! seq: Int }
  type User { name: String! }
  type Team { members: [User!] label: String }
  union Owner = User | Team
  type Query { courses: [Course!]! course(id: ID!): Course node(id: ID!): Node required: Course! owners: [Owner] }
`;
const schema = fi.buildSchema(SDL);

const OPERATIONS: Record<string, string> = {
  everyKind: `query($skip: Boolean!, $inc: Boolean = true) {
    courses {
      __typename id t: title title count ratio flag color meta tags @skip(if: $skip)
      versions { id label seq } related { id count } owner { __typename ... on User { name } ... on Team { members { name } label } }
    }
    course(id: "1") @include(if: $inc) { id alias: __typename title @include(if: false) }
  }`,
  abstract: `{
    node(id: "1") { id ... on Course { title versions { label } } ... on Version { label seq } ...F }
    owners { ... on User { name } ... on Team { label } kind: __typename }
  } fragment F on Node { __typename }`,
  nonNullRoot: `{ required { id count versions { label } } courses { id } }`,
  overlapping: `{ node(id: "1") { ... on Course { versions { id } } ... on Node { ... on Course { versions { label } count } } } }`,
  fragmentThenField: `{ course(id: "1") { ... on Course { versions { id } } versions { label } owner { ... on User { name } } } }`,
  introspection: `{ __typename __schema { queryType { name } } course(id: "1") { id } }`,
  // Response names every plain object inherits from Object.prototype: only an own value counts.
  inheritedNames: `{ courses { constructor: title toString: title valueOf: ratio __proto__: flag map: title id } }`,
};

function operationOf(source: string): Operation {
  return fi.operationFromDocument(schema, parse(source), { validate: false });
}

interface Outcome {
  threw?: string;
  json?: string;
  prototypes?: string;
  errors?: unknown[];
}

/** Everything an answer is made of, comparable with toEqual: key order and prototypes included. */
function outcome(shape: (input: ShapingInput) => ShapingOutput, input: ShapingInput): Outcome {
  let result: ShapingOutput;
  try {
    result = shape(input);
  } catch (error) {
    return { threw: String(error) };
  }
  return {
    json: JSON.stringify(result.data),
    prototypes: prototypesOf(result.data),
    errors: result.errors.map((error) => ({ message: error.message, path: error.path, code: error.extensions.code })),
  };
}

/** Per object: `n` when it inherits nothing (Apollo's: a null prototype; ours: one empty frozen object without one). */
function prototypesOf(value: unknown): string {
  if (value === null || typeof value !== 'object') return '';
  const own = inheritsNothing(value) ? 'n' : Array.isArray(value) ? 'a' : 'o';
  return `${own}(${Object.values(value).map(prototypesOf).join(',')})`;
}

function inheritsNothing(value: object): boolean {
  const prototype = Object.getPrototypeOf(value) as object | null;
  return (
    prototype === null ||
    (Object.getPrototypeOf(prototype) === null && Reflect.ownKeys(prototype).length === 0 && Object.isFrozen(prototype))
  );
}

function shapingInput(
  source: string,
  input: Record<string, unknown> | null,
  variables: Record<string, unknown> = {},
): ShapingInput {
  return {
    operation: operationOf(source),
    variables,
    input,
    introspectionHandling: (selection) => `introspection of ${selection.element.responseName()}`,
  };
}

function expectSameAnswer(source: string, input: Record<string, unknown> | null, variables?: Record<string, unknown>) {
  // Each run gets its own copy: shaping must not depend on (or change) what it reads.
  const ours = outcome(computeResponse, shapingInput(source, structuredClone(input), variables));
  const theirs = outcome(apollo.computeResponse, shapingInput(source, structuredClone(input), variables));
  expect(ours).toEqual(theirs);
  return ours;
}

/**
 * An input for every field of the schema's types (more than any operation selects), mostly well
 * formed, sometimes not: null, missing, a value of another type, an unknown or mismatched typename.
 */
function generator(next: () => number, { maxDepth = 3, faults = 1 } = {}) {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const WRONG: unknown[] = [1.5, 'text', 7, true, { a: 1 }, ['x'], -3, 1e21, -0, 2 ** 40, '', false];
  const leaf = (type: NamedType): unknown => {
    if (type.kind === 'EnumType') return next() < 0.9 ? pick(type.values.map((v) => v.name)) : 'BLUE';
    const byName: Record<string, () => unknown> = {
      ID: () => pick(['1', 2, 'c3']),
      String: () => `s${Math.floor(next() * 100)}`,
      Int: () => Math.floor(next() * 1000) - 500,
      Float: () => next() * 10,
      Boolean: () => next() < 0.5,
    };
    return (byName[type.name] ?? (() => pick([{ any: 'json' }, [1, 2], 'text', 3])))();
  };
  const value = (type: Type, depth: number): unknown => {
    const roll = next() / faults;
    if (roll < 0.08) return null;
    if (roll < 0.12) return pick(WRONG);
    if (type.kind === 'NonNullType') return value(type.ofType, depth);
    if (type.kind === 'ListType') return Array.from({ length: Math.floor(next() * 4) }, () => value(type.ofType, depth));
    if (type.kind === 'ScalarType' || type.kind === 'EnumType') return leaf(type);
    if (depth > maxDepth) return null;
    return object(type as NamedType, depth + 1);
  };
  const object = (type: NamedType, depth: number): Record<string, unknown> => {
    const runtime = 'possibleRuntimeTypes' in type ? pick(type.possibleRuntimeTypes()) : type;
    const result: Record<string, unknown> = {};
    const typename = next();
    if (typename < 0.05 * faults) result.__typename = pick(['Nope', 'Color', 'Query']);
    else if (typename < 0.85) result.__typename = runtime.name;
    if ('fields' in runtime) {
      for (const field of runtime.fields()) {
        if (next() / faults < 0.05) continue;
        result[field.name] = value(field.type!, depth);
      }
    }
    if (next() < 0.2) result.extra = 'not selected';
    return result;
  };
  return { object };
}

describe('result shaping answers what Apollo Gateway answers', () => {
  const course = {
    __typename: 'Course',
    id: 'c1',
    title: 'T',
    count: 3,
    ratio: 0.5,
    flag: true,
    color: 'RED',
    meta: { free: ['form'] },
    tags: ['a', 'b'],
    versions: [{ __typename: 'Version', id: 'v1', label: '1.0', seq: 1, extra: 'dropped' }],
    related: [null, { id: 'c2', count: 1 }],
    owner: { __typename: 'Team', members: [{ name: 'Ann' }], label: 'L' },
  };

  it('copies the selected fields in the operation order, with aliases, fragments and __typename', () => {
    const answer = expectSameAnswer(
      OPERATIONS.everyKind,
      { courses: [course, { ...course, id: 'c3' }], course },
      { skip: false },
    );
    expect(answer.errors).toEqual([]);
    expect(JSON.parse(answer.json!).course).toEqual({ id: 'c1', alias: 'Course' });
  });

  it('applies @skip and @include from variables and their defaults', () => {
    const skipped = expectSameAnswer(OPERATIONS.everyKind, { courses: [course], course }, { skip: true, inc: false });
    expect(JSON.parse(skipped.json!)).not.toHaveProperty('course');
    expect(JSON.parse(skipped.json!).courses[0]).not.toHaveProperty('tags');
  });

  it('bubbles a null in a non-null place up to the nearest nullable one, with one error', () => {
    const answer = expectSameAnswer(OPERATIONS.everyKind, { courses: [{ ...course, count: null }], course }, { skip: false });
    expect(answer.json).toBe('null');
    expect(answer.errors).toHaveLength(1);
    const inList = expectSameAnswer(OPERATIONS.nonNullRoot, {
      required: { ...course, versions: [{ label: null }] },
      courses: [],
    });
    expect(inList.json).toBe('null');
  });

  it('nulls invalid leaf values and unknown typenames with an error each', () => {
    const answer = expectSameAnswer(
      OPERATIONS.everyKind,
      { courses: [{ ...course, ratio: 'x', color: 'BLUE', flag: 1, title: false }], course: { ...course, __typename: 'Nope' } },
      { skip: false },
    );
    expect(answer.errors!.length).toBeGreaterThanOrEqual(4);
  });

  it('resolves fragments on interfaces and unions by the typename, and merges overlapping selections', () => {
    expectSameAnswer(OPERATIONS.abstract, { node: course, owners: [course.owner, { __typename: 'User', name: 'Bo' }, null] });
    expectSameAnswer(OPERATIONS.abstract, { node: { __typename: 'Version', id: 'v', label: 'l', seq: 2 }, owners: [] });
    expectSameAnswer(OPERATIONS.abstract, { node: { id: 'no typename' }, owners: [{ name: 'no typename' }] });
    expectSameAnswer(OPERATIONS.overlapping, { node: course });
    const merged = expectSameAnswer(OPERATIONS.fragmentThenField, { course });
    expect(JSON.parse(merged.json!).course.versions).toEqual([{ id: 'v1', label: '1.0' }]);
  });

  it('hands introspection fields to the introspection handler', () => {
    const answer = expectSameAnswer(OPERATIONS.introspection, { course });
    expect(JSON.parse(answer.json!)).toMatchObject({ __typename: 'Query', __schema: 'introspection of __schema' });
  });

  it('reads only own values, under response names objects inherit too', () => {
    const own = { id: 'c1', constructor: 'own title', toString: 'own string', valueOf: 2.5, ['__proto__']: true };
    Object.defineProperty(own, '__proto__', { value: true, enumerable: true }); // own, not the prototype
    const answer = expectSameAnswer(OPERATIONS.inheritedNames, {
      courses: [own, JSON.parse('{"id":"c2"}'), Object.assign(Object.create(null), { id: 'c3', constructor: 'null prototype' })],
    });
    const courses = JSON.parse(answer.json!).courses;
    expect(courses[0]).toMatchObject({ constructor: 'own title', toString: 'own string', valueOf: 2.5 });
    expect(courses[1]).toMatchObject({ constructor: null, toString: null, valueOf: null });
    expect(courses[2]).toMatchObject({ constructor: 'null prototype', toString: null });
    // A list where an object is expected: never the methods it inherits from Array.prototype.
    expectSameAnswer(OPERATIONS.inheritedNames, { courses: [Object.assign(['x'], { id: 'c4' })] });
  });

  it("keeps an operation's steps for its next requests only where no @skip or @include can change them", () => {
    const next = seededRandom(7);
    const { object } = generator(next);
    // One Operation for many requests, as the executor's shared one (shared-operations.ts).
    for (const name of ['everyKind', 'abstract', 'overlapping', 'fragmentThenField', 'inheritedNames']) {
      const operation = operationOf(OPERATIONS[name]!);
      for (let index = 0; index < 60; index++) {
        const input = object(schema.schemaDefinition.rootType('query')!, 0);
        const variables = { skip: next() < 0.5, inc: next() < 0.5 };
        const run = (shape: typeof computeResponse) =>
          outcome(shape, { operation, variables, input: structuredClone(input), introspectionHandling: () => null });
        expect(run(computeResponse)).toEqual(run(apollo.computeResponse));
      }
    }
  });

  it('throws what Apollo throws on answers no subgraph may give', () => {
    const answer = expectSameAnswer(OPERATIONS.nonNullRoot, { required: { ...course, versions: 'not a list' }, courses: [] });
    expect(answer.threw).toContain('Invalid non-list value');
    expect(expectSameAnswer(OPERATIONS.nonNullRoot, null).json).toBe('null');
  });

  it.each(Object.keys(OPERATIONS))('answers the same on 300 random inputs: %s', (name) => {
    const next = seededRandom(name.length * 7919);
    const { object } = generator(next);
    const seen = { errors: 0, nullData: 0, threw: 0, clean: 0 };
    for (let index = 0; index < 300; index++) {
      const input = object(schema.schemaDefinition.rootType('query')!, 0);
      const answer = expectSameAnswer(OPERATIONS[name], input, { skip: next() < 0.5, inc: next() < 0.5 });
      if (answer.threw) seen.threw++;
      else if (answer.json === 'null') seen.nullData++;
      else if (answer.errors!.length > 0) seen.errors++;
      else seen.clean++;
    }
    // The inputs reach every outcome: clean answers, errors (beside data or nulling it), asserts.
    expect(seen.clean).toBeGreaterThan(0);
    expect(seen.errors + seen.nullData).toBeGreaterThan(0);
    expect(seen.threw).toBeGreaterThan(0);
  });

  it('answers the bench wide page the same over the supergraph', () => {
    const supergraph = fi.Supergraph.build(
      fs.readFileSync(new URL('../../../gateway/supergraph.graphql', import.meta.url), 'utf8'),
    );
    const api = supergraph.apiSchema();
    const wide = /const WIDE = `([\s\S]*?)`;/.exec(
      fs.readFileSync(new URL('../../../bench/gateway.ts', import.meta.url), 'utf8'),
    )![1]!;
    // Well-formed answers first (the bench's case), then ones with a fault in about one value of 200.
    const next = seededRandom(42);
    const clean = generator(next, { maxDepth: 8, faults: 0 });
    const faulty = generator(next, { maxDepth: 8, faults: 0.05 });
    const seen = { clean: 0, errors: 0 };
    for (let index = 0; index < 40; index++) {
      const input = (index < 20 ? clean : faulty).object(api.schemaDefinition.rootType('query')!, 0);
      const shaping = (shape: typeof computeResponse) =>
        outcome(shape, {
          operation: fi.operationFromDocument(api, parse(wide), { validate: false }),
          variables: { after: null },
          input: structuredClone(input),
          introspectionHandling: () => null,
        });
      const ours = shaping(computeResponse);
      expect(ours).toEqual(shaping(apollo.computeResponse));
      if (ours.errors?.length === 0) seen.clean++;
      else seen.errors++;
    }
    expect(seen.clean).toBeGreaterThanOrEqual(20);
    expect(seen.errors).toBeGreaterThan(0);
  });
});

describe('useResultShaping', () => {
  it("chooses the shaping Apollo Gateway's executor calls, which reads the module's export at every answer", async () => {
    expect(apollo.computeResponse).not.toBe(computeResponse);
    const supergraph = fi.Supergraph.build(
      fs.readFileSync(new URL('../../../gateway/supergraph.graphql', import.meta.url), 'utf8'),
    );
    const api = supergraph.apiSchema();
    const operationContext = buildOperationContext({
      schema: api.toGraphQLJSSchema(),
      operationDocument: parse('{ __typename }'),
    });
    const answer = () =>
      executeQueryPlan(
        { kind: 'QueryPlan', node: undefined },
        {},
        { request: { variables: {} }, logger: console } as unknown as Parameters<typeof executeQueryPlan>[2],
        operationContext,
        supergraph.schema.toGraphQLJSSchema(),
        api,
        undefined,
      );
    const calls: string[] = [];
    const operations: Operation[] = [];
    try {
      useResultShaping('lean');
      expect(apolloModule.computeResponse).toBe(computeResponse);
      // What the executor calls is what the export holds when it runs, not what it held at load.
      apolloModule.computeResponse = (input) => {
        calls.push('called');
        operations.push(input.operation);
        return computeResponse(input);
      };
      expect(await answer()).toEqual({ data: { __typename: 'Query' } });
      expect(calls).toEqual(['called']);
      // The executor's Operation is built once per parsed operation and shared by its requests.
      expect(await answer()).toEqual({ data: { __typename: 'Query' } });
      expect(operations[1] === operations[0]).toBe(true);
      useResultShaping('apollo');
      expect(apolloModule.computeResponse).toBe(apollo.computeResponse);
      expect(await answer()).toEqual({ data: { __typename: 'Query' } });
      // Apollo's path throughout: an Operation per request again.
      apolloModule.computeResponse = (input) => {
        operations.push(input.operation);
        return apollo.computeResponse(input);
      };
      await answer();
      await answer();
      // Compared as booleans: `not.toBe` deep-compares two Operations (the whole schema graph) to pass.
      expect(operations[3] === operations[2]).toBe(false);
      expect(operations[2] === operations[0]).toBe(false);
    } finally {
      apolloModule.computeResponse = apollo.computeResponse;
      useResultShaping('lean');
    }
  });
});
