import {
  buildSchema,
  getIntrospectionQuery,
  parse,
  specifiedRules,
  validate,
  type GraphQLError,
  type OperationDefinitionNode,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors/errors.js';
import type { QueryLimits } from '../../../platform/config/config.js';
import { limitError, queryLimitOptions } from '../../../platform/graphql/query-limits.js';
import { loadSystemConfig } from '../../../processes/config.js';

const schema = buildSchema(`
  type Query { course(id: ID!): Course _entities(representations: [_Any!]!): [_Entity]! shadowParity(featureKey: String!): Parity! }
  type Course { id: ID! parent: Course }
  type Parity { ratio: Float }
  scalar _Any
  union _Entity = Course
`);

function refusals(query: string, limits: Partial<QueryLimits> = {}) {
  const options = queryLimitOptions({ ...loadSystemConfig({}).ops.limits, ...limits });
  const errors = validate(schema, parse(query), [...specifiedRules, ...options.validationRules]);
  return errors.map((error) => error.originalError as AppError | undefined).filter((error) => error instanceof AppError);
}

describe('query limits at validation (GraphQL Armor rules)', () => {
  it('refuses depth, aliases and directives over their limits with stable codes and the numbers', () => {
    expect(refusals('{ course(id: "1") { parent { parent { id } } } }', { maxDepth: 3 })).toMatchObject([
      { code: 'query.too_deep', status: 400, details: { limit: 'depth', found: 4, max: 3 } },
    ]);
    expect(
      refusals('{ a: course(id: "1") { id } b: course(id: "2") { id } c: course(id: "3") { id } }', { maxAliases: 2 }),
    ).toMatchObject([{ code: 'query.too_many_aliases', details: { found: 3, max: 2 } }]);
    expect(refusals('{ course(id: "1") @skip(if: false) { id @include(if: true) } }', { maxDirectives: 1 })).toMatchObject([
      { code: 'query.too_many_directives', details: { found: 2, max: 1 } },
    ]);
  });

  it('refuses a string literal longer than QUERY_MAX_STRING_LITERAL (16,384 by default), block strings too', () => {
    const huge = 'x'.repeat(900 * 1024);
    // Seven tokens: no other limit sees it (issue #24, the APQ flood).
    expect(refusals(`{ course(id: "${huge}") { id } }`)).toMatchObject([
      { code: 'query.string_too_long', status: 400, details: { limit: 'strings', found: huge.length, max: 16_384 } },
    ]);
    expect(refusals(`{ course(id: """${'y'.repeat(101)}""") { id } }`, { maxStringLiteral: 100 })).toMatchObject([
      { code: 'query.string_too_long', details: { found: 101, max: 100 } },
    ]);
    expect(refusals(`{ course(id: "${'z'.repeat(16_384)}") { id } }`)).toEqual([]);
  });

  it('counts introspection for depth and aliases like any other field', () => {
    const aliased = `{ ${Array.from({ length: 40 }, (_, i) => `s${i}: __schema { queryType { name } }`).join(' ')} }`;
    expect(refusals(aliased)).toMatchObject([{ code: 'query.too_many_aliases' }]);
    expect(refusals('{ __schema { types { fields { type { name } } } } }', { maxDepth: 3 })).toMatchObject([
      { code: 'query.too_deep' },
    ]);
  });

  it("lets the standard introspection query (GraphiQL's, Sandbox's) through the default limits", () => {
    expect(refusals(getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true, specifiedByUrl: true }))).toEqual(
      [],
    );
  });

  it('names the limit, what was found and the bound', () => {
    expect(limitError('cost', 12_000, 10_000)).toMatchObject({
      code: 'query.too_costly',
      status: 400,
      details: { limit: 'cost', found: 12_000, max: 10_000 },
    });
  });
});

describe('the token limit', () => {
  it("recognises graphql-js's own refusal (its message says 'more that'), whatever the spelling", async () => {
    const { parse } = await import('graphql');
    const { isTokenLimitError } = await import('../../../platform/graphql/query-limits.js');
    let refused: unknown;
    try {
      parse('{ a a a a a a a a a a a a }', { maxTokens: 5 });
    } catch (error) {
      refused = error;
    }
    expect(isTokenLimitError(refused)).toBe(true);
    expect(isTokenLimitError(new Error('Syntax Error: Unexpected Name "x".'))).toBe(false);
  });
});

describe('query limits once the operation is known (cost, representations)', () => {
  /** What the limits plugin says about an operation: the refusal it throws, or undefined. */
  async function refusal(
    query: string,
    variables: Record<string, unknown> = {},
    limits: Partial<QueryLimits> = {},
    trusted = false,
  ) {
    const { plugin } = queryLimitOptions<{ trustedOperation?: boolean }>({ ...loadSystemConfig({}).ops.limits, ...limits });
    const hooks = await plugin.requestDidStart!({} as never);
    const document = parse(query);
    const operation = document.definitions[0] as OperationDefinitionNode;
    try {
      await hooks!.didResolveOperation!({
        schema,
        document,
        operation,
        request: { variables },
        contextValue: { trustedOperation: trusted },
      } as never);
      return undefined;
    } catch (error) {
      return ((error as GraphQLError).originalError as AppError).details;
    }
  }
  const entities = 'query E($r: [_Any!]!) { _entities(representations: $r) { __typename } }';
  const course = (id: number) => ({ __typename: 'Course', id: String(id) });

  it('refuses more _entities representations than QUERY_MAX_REPRESENTATIONS (500 by default), trusted or not', async () => {
    const many = Array.from({ length: 10_000 }, (_, i) => course(i));
    expect(await refusal(entities, { r: many })).toEqual({ limit: 'representations', found: 10_000, max: 500 });
    expect(await refusal(entities, { r: many.slice(0, 501) }, {}, true)).toEqual({
      limit: 'representations',
      found: 501,
      max: 500,
    });
    expect(await refusal(entities, { r: many.slice(0, 500) })).toBeUndefined();
    expect(limitError('representations', 501, 500)).toMatchObject({ code: 'query.too_many_representations', status: 400 });
  });

  it('costs shadowParity as the scan it is (field-costs.ts): 29 aliases are refused, a few pass', async () => {
    const aliased = (n: number) =>
      `{ ${Array.from({ length: n }, (_, i) => `p${i}: shadowParity(featureKey: "f${i}") { ratio }`).join(' ')} }`;
    expect(await refusal(aliased(29))).toEqual({ limit: 'cost', found: 29 * 5_001, max: 20_000 });
    expect(await refusal(aliased(3))).toBeUndefined();
    expect(await refusal(aliased(29), {}, {}, true)).toBeUndefined();
  });
});
