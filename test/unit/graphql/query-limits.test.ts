import { buildSchema, getIntrospectionQuery, parse, specifiedRules, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors.js';
import { limitError, queryLimitOptions, type QueryLimits } from '../../../platform/graphql/query-limits.js';
import { loadSystemConfig } from '../../../processes/config.js';

const schema = buildSchema(`
  type Query { course(id: ID!): Course }
  type Course { id: ID! parent: Course }
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
