import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { GraphQLError, Kind, parse, type OperationDefinitionNode } from 'graphql';
import { sha256Hex } from '../text/canonical-json.js';
import { AppError, statusForCode } from '../errors/errors.js';
import type { KeyedWrite } from '../http/pipeline.js';
import { isStorableStatus, parseIdempotencyKey, requestFingerprint, type StoredResponse } from './idempotency.logic.js';

/**
 * The Idempotency-Key rule on the GraphQL door: it applies to mutations. When the operation a POST
 * body selects is a mutation, its keyed write: the key is scoped by the operation's name (or a hash
 * of the document when it has none), and only answers whose mutation ran are replayed. A document
 * that does not parse (or has more than `maxTokens` tokens) is left to the server, which refuses it
 * without executing anything.
 */
export function graphqlKeyedWrite(body: unknown, maxTokens: number): KeyedWrite | undefined {
  const route = mutationRoute(body, maxTokens);
  if (route === undefined) return undefined;
  return {
    route,
    fingerprint: requestFingerprint('POST', '/graphql', body),
    storable: isStorableGraphQLResponse,
    requiredOn: 'mutations',
  };
}

function mutationRoute(body: unknown, maxTokens: number): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { query, operationName } = body as { query?: unknown; operationName?: unknown };
  if (typeof query !== 'string') return undefined;
  // A mutation is always written with its keyword (the `{ … }` shorthand is a query, and GraphQL
  // names have no escapes), so a text without the word needs no parse here; Apollo parses it once
  // per text anyway. This parse of every read was 1.7 % of the gateway's CPU on a nested page.
  if (!query.includes('mutation')) return undefined;
  let operations: OperationDefinitionNode[];
  try {
    operations = parse(query, { noLocation: true, maxTokens }).definitions.filter(
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
          throw new GraphQLError(refused.message, { originalError: refused, extensions: { http: { status: refused.status } } });
        },
      };
    },
  };
}

/**
 * The same rule at a subgraph's own door (defence in depth: the ports belong on a private network,
 * but a caller that reaches one directly must not run a mutation a retry could run twice). The
 * key is checked for presence and form; the mutation's effect row does the rest.
 */
export function idempotencyKeyRequiredPlugin<TContext extends BaseContext>(): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, request }) {
          if (operation?.operation !== 'mutation') return;
          try {
            parseIdempotencyKey(request.http?.headers.get('idempotency-key'), 'mutations');
          } catch (error) {
            const refused = error as AppError;
            throw new GraphQLError(refused.message, { originalError: refused, extensions: { http: { status: refused.status } } });
          }
        },
      };
    },
  };
}
