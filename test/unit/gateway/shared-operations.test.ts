import { createRequire } from 'node:module';
import { Kind, parse, type DocumentNode } from 'graphql';
import { afterEach, describe, expect, it } from 'vitest';
import { shareExecutorOperations } from '../../../gateway/result-shaping/shared-operations.js';

// What Apollo Gateway's executor calls (executeQueryPlan.js reads the export of
// @apollo/federation-internals at every call); gateway/result-shaping/shared-operations.ts.
const gatewayRequire = createRequire(createRequire(import.meta.url).resolve('@apollo/gateway'));
const fi = gatewayRequire('@apollo/federation-internals') as typeof import('@apollo/federation-internals');

const SDL = `type Course { id: ID! title: String } type Query { course: Course courses: [Course] }`;

/**
 * Whether two Operations are one object. (`expect(a).not.toBe(b)` would deep-compare the two on
 * its way to passing: each reaches the whole schema graph.)
 */
const same = (a: unknown, b: unknown): boolean => a === b;

/** The document executeQueryPlan builds per request: the same operation and fragment nodes, a new wrapper. */
function executorDocument(parsed: DocumentNode): DocumentNode {
  return { kind: Kind.DOCUMENT, definitions: [...parsed.definitions] };
}

describe('shareExecutorOperations', () => {
  afterEach(() => shareExecutorOperations(true));

  it("builds the executor's Operation once per parsed operation and hands the same one to its next requests", () => {
    shareExecutorOperations(true);
    const schema = fi.buildSchema(SDL);
    const parsed = parse('query Q { course { ...F } courses { id } } fragment F on Course { id title }');
    const first = fi.operationFromDocument(schema, executorDocument(parsed), { validate: false });
    expect(same(fi.operationFromDocument(schema, executorDocument(parsed), { validate: false }), first)).toBe(true);
    expect(first.toString()).toContain('course');
  });

  it('builds again when anything it was built from differs: the fragments, the schema, another operation', () => {
    shareExecutorOperations(true);
    const schema = fi.buildSchema(SDL);
    const parsed = parse('query Q { course { ...F } } fragment F on Course { id }');
    const first = fi.operationFromDocument(schema, executorDocument(parsed), { validate: false });
    const otherFragment = parse('fragment F on Course { title }').definitions[0]!;
    const withOtherFragment = fi.operationFromDocument(
      schema,
      { kind: Kind.DOCUMENT, definitions: [parsed.definitions[0]!, otherFragment] },
      { validate: false },
    );
    expect(same(withOtherFragment, first)).toBe(false);
    expect(withOtherFragment.toString()).toContain('title');
    expect(same(fi.operationFromDocument(fi.buildSchema(SDL), executorDocument(parsed), { validate: false }), first)).toBe(false);
    const reparsed = parse('query Q { course { ...F } } fragment F on Course { id }');
    expect(same(fi.operationFromDocument(schema, executorDocument(reparsed), { validate: false }), first)).toBe(false);
  });

  it("leaves every other call to Apollo's function: validation on, an operation name", () => {
    shareExecutorOperations(true);
    const schema = fi.buildSchema(SDL);
    const parsed = parse('query Q { course { id } }');
    expect(same(fi.operationFromDocument(schema, parsed), fi.operationFromDocument(schema, parsed))).toBe(false);
    const named = () => fi.operationFromDocument(schema, parsed, { validate: false, operationName: 'Q' });
    expect(same(named(), named())).toBe(false);
    // And an invalid document still fails as Apollo's does.
    expect(() => fi.operationFromDocument(schema, parse('{ nope }'), { validate: false })).toThrow(/nope/);
  });

  it("off: Apollo's function again, an Operation per request", () => {
    shareExecutorOperations(false);
    const schema = fi.buildSchema(SDL);
    const parsed = parse('{ course { id } }');
    const build = () => fi.operationFromDocument(schema, executorDocument(parsed), { validate: false });
    expect(same(build(), build())).toBe(false);
  });
});
