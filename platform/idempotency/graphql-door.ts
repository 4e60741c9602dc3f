import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { GraphQLError, Kind, parse, type OperationDefinitionNode } from 'graphql';
import { sha256Hex } from '../canonical-json.js';
import { AppError, statusForCode } from '../errors.js';
import { isStorableStatus, type StoredResponse } from './idempotency.logic.js';

/**
 * The Idempotency-Key rule on the GraphQL door: it applies to mutations. Returns the key scope's
 * route name (`graphql:<operationName>`, or a hash of the document when it has none) when the
 * operation the request selects is a mutation, else undefined. A document that does not parse is
 * left to the server, which refuses it without executing anything.
 */
export function mutationRoute(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { query, operationName } = body as { query?: unknown; operationName?: unknown };
  if (typeof query !== 'string') return undefined;
  let operations: OperationDefinitionNode[];
  try {
    operations = parse(query, { noLocation: true }).definitions.filter(
      (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
    );
  } catch {
    return undefined;
  }
  const selected =
    typeof operationName === 'string'
      ? operations.find((op) => op.name?.value === operationName)
      : operations.length === 1
        ? operations[0]
        : undefined;
  if (selected?.operation !== 'mutation') return undefined;
  return selected.name ? `graphql:${selected.name.value}` : `graphql:#${sha256Hex(query)}`;
}

/**
 * A GraphQL answer is replayable when a mutation field produced data (its effect happened) or
 * when every error is a storable outcome; refusals such as bad input or auth free the key.
 */
export function isStorableGraphQLResponse(response: StoredResponse): boolean {
  if (!isStorableStatus(response.status)) return false;
  let parsed: { data?: Record<string, unknown> | null; errors?: Array<{ extensions?: Record<string, unknown> }> };
  try {
    parsed = JSON.parse(response.body);
  } catch {
    return false;
  }
  if (parsed.data && Object.values(parsed.data).some((value) => value !== null)) return true;
  return (parsed.errors ?? []).every((error) => {
    const code = error.extensions?.code;
    const status =
      typeof error.extensions?.status === 'number'
        ? error.extensions.status
        : statusForCode(typeof code === 'string' ? code : '');
    return isStorableStatus(status);
  });
}

/**
 * The door's check parses the request's query text; a persisted-query hash sent alone carries
 * none, and any other in-process caller could skip the check. This plugin sees the resolved
 * operation of every request and refuses a mutation whose caller did not apply the
 * Idempotency-Key rules, before anything executes.
 */
export function unguardedMutationPlugin<
  TContext extends BaseContext & { idempotencyChecked?: boolean },
>(): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, contextValue }) {
          if (operation?.operation !== 'mutation' || contextValue.idempotencyChecked) return;
          const refused = new AppError(
            'idempotency.query_text_required',
            'Mutations must be sent with their query text (not a persisted-query hash alone), so the Idempotency-Key rules can apply',
            { status: 400 },
          );
          throw new GraphQLError(refused.message, {
            originalError: refused,
            extensions: { code: refused.code, status: refused.status, http: { status: refused.status } },
          });
        },
      };
    },
  };
}
