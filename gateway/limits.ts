import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import {
  getNamedType,
  getNullableType,
  GraphQLError,
  isListType,
  isCompositeType,
  Kind,
  valueFromASTUntyped,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  isObjectType,
  isInterfaceType,
} from 'graphql';
import { AppError } from '../platform/errors.js';
import type { Metrics } from '../platform/metrics.js';

export interface QueryLimits {
  maxDepth: number;
  maxCost: number;
  /** Items assumed for a list field whose size no `first`/`last`/`limit` argument bounds. */
  defaultListSize: number;
}

/** Arguments that bound how many items a field returns. */
const SIZE_ARGUMENTS = ['first', 'last', 'limit', 'pageSize'];

export interface OperationMeasure {
  depth: number;
  cost: number;
}

/**
 * Depth and cost of one operation, fragments inlined. Cost counts every selected field once per
 * item it is resolved for: a field below a list is multiplied by the list's size, taken from a
 * `first`/`last`/`limit` argument on the list field or on the connection field above it (the
 * `courses(first: 5) { edges { node } }` pattern), else `defaultListSize`. Introspection fields
 * (`__schema`, `__type`, `__typename`) are free and do not count for depth, so schema explorers work.
 */
export function measureOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  defaultListSize: number,
): OperationMeasure {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const root = schema.getRootType(operation.operation);
  if (!root) return { depth: 0, cost: 0 };

  const sizeOf = (
    args: readonly { name: { value: string }; value: import('graphql').ValueNode }[] | undefined,
  ): number | undefined => {
    for (const arg of args ?? []) {
      if (!SIZE_ARGUMENTS.includes(arg.name.value)) continue;
      const value = valueFromASTUntyped(arg.value, variables);
      if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return Math.ceil(value);
    }
    return undefined;
  };

  // Returns [depth, cost of one resolution of this selection set].
  const walk = (
    selectionSet: SelectionSetNode,
    parent: GraphQLCompositeType,
    pendingSize: number | undefined,
    seen: Set<string>,
  ): [number, number] => {
    let depth = 0;
    let cost = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        if (name.startsWith('__')) continue;
        const field = fieldOf(parent, name);
        const namedType = field ? getNamedType(field.type) : undefined;
        const isList = field ? isListType(getNullableType(field.type)) : false;
        const ownSize = sizeOf(selection.arguments);
        let multiplier = 1;
        let childPending = ownSize ?? pendingSize;
        if (isList) {
          multiplier = ownSize ?? pendingSize ?? defaultListSize;
          childPending = undefined;
        }
        let childDepth = 0;
        let childCost = 0;
        if (selection.selectionSet && namedType && isCompositeType(namedType)) {
          [childDepth, childCost] = walk(selection.selectionSet, namedType, childPending, seen);
        }
        depth = Math.max(depth, 1 + childDepth);
        cost += multiplier * (1 + childCost);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const typeName = selection.typeCondition?.name.value;
        const type = typeName ? schema.getType(typeName) : parent;
        const target = type && isCompositeType(type) ? type : parent;
        const [d, c] = walk(selection.selectionSet, target, pendingSize, seen);
        depth = Math.max(depth, d);
        cost += c;
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        // Validation has already refused fragment cycles; `seen` only guards against a bad document.
        if (!fragment || seen.has(name)) continue;
        const type = schema.getType(fragment.typeCondition.name.value);
        const target = type && isCompositeType(type) ? type : parent;
        const [d, c] = walk(fragment.selectionSet, target, pendingSize, new Set([...seen, name]));
        depth = Math.max(depth, d);
        cost += c;
      }
    }
    return [depth, cost];
  };

  const [depth, cost] = walk(operation.selectionSet, root, undefined, new Set());
  return { depth, cost };
}

function fieldOf(parent: GraphQLCompositeType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (isObjectType(parent) || isInterfaceType(parent)) return parent.getFields()[name];
  return undefined;
}

/** Checks a measured operation against the limits; the error says by how much it is over. */
export function checkLimits(measure: OperationMeasure, limits: QueryLimits): AppError | undefined {
  if (measure.depth > limits.maxDepth) {
    return new AppError(
      'QUERY_TOO_DEEP',
      `The operation is nested ${measure.depth} levels deep; at most ${limits.maxDepth} are allowed`,
      {
        status: 400,
        details: { depth: measure.depth, maxDepth: limits.maxDepth },
      },
    );
  }
  if (measure.cost > limits.maxCost) {
    return new AppError(
      'QUERY_TOO_COSTLY',
      `The operation could resolve about ${measure.cost} fields; at most ${limits.maxCost} are allowed. Ask for fewer items (first/limit) or fewer fields`,
      { status: 400, details: { cost: measure.cost, maxCost: limits.maxCost } },
    );
  }
  return undefined;
}

/**
 * Refuses an operation over the limits after it is parsed and validated, before it is planned or
 * sent to any subgraph: HTTP 400 with `extensions.code` QUERY_TOO_DEEP or QUERY_TOO_COSTLY.
 */
export function queryLimitsPlugin<TContext extends BaseContext & { trustedOperation?: boolean }>(
  limits: QueryLimits,
  metrics?: Metrics,
): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ schema, document, operation, request, contextValue }) {
          if (!operation || contextValue.trustedOperation) return;
          const measure = measureOperation(schema, document, operation, request.variables, limits.defaultListSize);
          const refused = checkLimits(measure, limits);
          if (!refused) return;
          metrics?.graphqlRejections.inc({ limit: refused.code === 'QUERY_TOO_DEEP' ? 'depth' : 'cost' });
          throw new GraphQLError(refused.message, {
            originalError: refused,
            extensions: { code: refused.code, http: { status: refused.status } },
          });
        },
      };
    },
  };
}
