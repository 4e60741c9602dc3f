import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { GraphQLError, Kind } from 'graphql';
import { AppError } from '../errors/errors.js';

/**
 * What GraphQL over HTTP here executes: one query or mutation the request names (or the only one in
 * the document). A client asking for another operation gets a 400 with a stable code instead of the
 * error a gateway raises deep in its planner (which would look like our failure):
 * - an `operationName` the document does not define, or several operations and no name:
 *   OPERATION_RESOLUTION_FAILURE (Apollo's own code for it);
 * - a subscription: `graphql.subscription_not_supported` (there is no subscription transport).
 */
export function operationRules<TContext extends BaseContext>(): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, request, document }) {
          if (!operation) throw asGraphQLError(unresolvedOperation(request.operationName, document.definitions));
          if (operation.operation === 'subscription') {
            throw asGraphQLError(
              new AppError('graphql.subscription_not_supported', 'Subscriptions are not supported; send a query or a mutation', {
                status: 400,
              }),
            );
          }
        },
      };
    },
  };
}

function unresolvedOperation(name: string | undefined, definitions: ReadonlyArray<{ kind: string }>): AppError {
  const operations = definitions.filter((definition) => definition.kind === Kind.OPERATION_DEFINITION).length;
  const message = name
    ? `The document has no operation named "${name}"`
    : operations > 1
      ? 'The document has several operations: name the one to run in operationName'
      : 'The document has no operation to run';
  return new AppError('OPERATION_RESOLUTION_FAILURE', message, { status: 400 });
}

/** Thrown from a plugin hook, the AppError rides as originalError; format-error.ts answers its code and status. */
export function asGraphQLError(error: AppError): GraphQLError {
  return new GraphQLError(error.message, { originalError: error, extensions: { http: { status: error.status } } });
}
