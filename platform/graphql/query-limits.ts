import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import { GraphQLError, type ValidationContext, type ValidationRule } from 'graphql';
import { AppError, type KnownErrorCode } from '../errors/errors.js';
import type { QueryLimits } from '../config/config.js';
import type { Metrics } from '../observability/metrics.js';
import { FIELD_COSTS } from './field-costs.js';
import { OperationMeasures } from './operation-measures.js';

/** Which limit refused a document: the `limit` label of graphql_limit_rejections_total. */
export type LimitName = 'tokens' | 'depth' | 'aliases' | 'directives' | 'cost' | 'representations' | 'strings';

export const LIMIT_CODES: Record<LimitName, KnownErrorCode> = {
  tokens: 'query.too_many_tokens',
  depth: 'query.too_deep',
  aliases: 'query.too_many_aliases',
  directives: 'query.too_many_directives',
  cost: 'query.too_costly',
  representations: 'query.too_many_representations',
  strings: 'query.string_too_long',
};

/** The context members the limits read: documents the service wrote itself skip the cost limit. */
export interface LimitedContext extends BaseContext {
  trustedOperation?: boolean;
}

/**
 * Apollo Server options that enforce `limits`: the token bound at parse (graphql-js' own
 * `maxTokens`), depth, aliases and directives as GraphQL Armor validation rules (each measures a
 * fragment once), and cost once the operation and its variables are known.
 */
export function queryLimitOptions<TContext extends LimitedContext>(limits: QueryLimits, metrics?: Metrics) {
  const refused = (limit: LimitName) => metrics?.graphqlRejections.inc({ limit });
  const armor = { exposeLimits: true, propagateOnRejection: false } as const;
  const validationRules: ValidationRule[] = [
    maxDepthRule({
      ...armor,
      n: limits.maxDepth,
      flattenFragments: true,
      ignoreIntrospection: false,
      onReject: [reporter('depth', limits.maxDepth, refused)],
    }),
    maxAliasesRule({ ...armor, n: limits.maxAliases, onReject: [reporter('aliases', limits.maxAliases, refused)] }),
    maxDirectivesRule({ ...armor, n: limits.maxDirectives, onReject: [reporter('directives', limits.maxDirectives, refused)] }),
    maxStringLiteralRule(limits.maxStringLiteral, refused),
  ];
  const measures = new OperationMeasures({ ...limits, fieldCosts: FIELD_COSTS });
  const costPlugin: ApolloServerPlugin<TContext> = {
    async requestDidStart() {
      return {
        async parsingDidStart() {
          return async (error) => {
            if (error && isTokenLimitError(error)) refused('tokens');
          };
        },
        async didResolveOperation({ schema, document, operation, request, contextValue }) {
          if (!operation) return;
          // Before the cost: it is what sizes `_entities`, and it holds for trusted documents too.
          const measured = measures.of(schema, document, operation, request.variables);
          const representations = measured.representations();
          if (representations > limits.maxRepresentations) throw refusal('representations', representations);
          if (contextValue.trustedOperation) return;
          const cost = measured.cost();
          if (cost > limits.maxCost) throw refusal('cost', cost);
        },
      };
    },
  };
  function refusal(limit: 'cost' | 'representations', found: number): GraphQLError {
    refused(limit);
    const max = limit === 'cost' ? limits.maxCost : limits.maxRepresentations;
    const error = limitError(limit, found, max);
    return new GraphQLError(error.message, { originalError: error, extensions: { http: { status: 400 } } });
  }
  return { parseOptions: { maxTokens: limits.maxTokens }, validationRules, plugin: costPlugin };
}

const MESSAGES: Record<LimitName, (found: number | undefined, max: number) => string> = {
  tokens: (_found, max) => `The document has more than ${max} tokens`,
  depth: (found, max) => `The operation is nested ${found ?? 'too many'} levels deep; at most ${max} are allowed`,
  aliases: (found, max) => `The operation uses ${found ?? 'too many'} aliases; at most ${max} are allowed`,
  directives: (found, max) => `The operation uses ${found ?? 'too many'} directives; at most ${max} are allowed`,
  cost: (found, max) =>
    `The operation could resolve about ${found} fields; at most ${max} are allowed. Ask for fewer items (first/limit) or fewer fields`,
  representations: (found, max) =>
    `The operation asks for ${found} entity representations; at most ${max} are allowed in one request`,
  strings: (found, max) =>
    `The document holds a string literal of ${found} characters; at most ${max} are allowed (pass long text as a variable)`,
};

/** Refuses the first string literal (block strings included) longer than `max` characters. */
function maxStringLiteralRule(max: number, refused: (limit: LimitName) => void): ValidationRule {
  return (context) => {
    let reported = false;
    return {
      StringValue(node) {
        if (reported || node.value.length <= max) return;
        reported = true;
        refused('strings');
        const error = limitError('strings', node.value.length, max);
        context.reportError(new GraphQLError(error.message, { nodes: [node], originalError: error }));
      },
    };
  };
}

/** The refusal of one limit, with the measured value (when known) and the bound in its details. */
export function limitError(limit: LimitName, found: number | undefined, max: number): AppError {
  return new AppError(LIMIT_CODES[limit], MESSAGES[limit](found, max), {
    status: 400,
    details: { limit, ...(found === undefined ? {} : { found }), max },
  });
}

/** GraphQL Armor reports "… limit of N exceeded, found M."; the refusal says it with our code. */
function reporter(limit: LimitName, max: number, refused: (limit: LimitName) => void) {
  return (context: ValidationContext | null, armorError: GraphQLError) => {
    const found = Number(/found (\d+)/.exec(armorError.message)?.[1]);
    const error = limitError(limit, Number.isFinite(found) ? found : undefined, max);
    refused(limit);
    context?.reportError(new GraphQLError(error.message, { originalError: error }));
  };
}

/** graphql-js stops parsing at `maxTokens` with this message (its only signal). */
export function isTokenLimitError(error: unknown): boolean {
  return error instanceof Error && /Document contains more th(?:an|at) \d+ tokens/.test(error.message);
}
