import { GraphQLError, Kind, type DocumentNode, type SelectionSetNode } from 'graphql';
import type { GatewayGraphQLResponse } from '@apollo/server-gateway-interface';

/**
 * What a subgraph that could not serve a fetch leaves in the answer: `subgraph.unavailable` (503,
 * retry after 1 s: the REST door answers it as such, and the GraphQL door too when nothing of the
 * operation could answer, platform/graphql/outage-status.ts) on the path of each field the fetch
 * was for. Nothing of the replica's address or of what answered there: that is logged.
 */
export function unavailableExtensions(subgraph: string) {
  return { code: 'subgraph.unavailable', serviceName: subgraph, status: 503, retryAfterSeconds: 1 };
}

export function unavailableMessage(subgraph: string): string {
  return `The ${subgraph} service is unavailable; fields it serves are null`;
}

/**
 * A root fetch (the operation's own fields) answers one error per root field it was for, each on
 * that field's path, so a client — and the outage rule — can tell which fields are missing and
 * why. An entity fetch (`_entities`, fields of objects another subgraph returned) throws one error
 * on the path of the list or object those entities hang under: one per entity would be a hundred
 * errors for a page of a hundred courses saying the same thing.
 */
export function unavailableAnswer(
  subgraph: string,
  fetch: { document?: DocumentNode; variables?: Record<string, unknown>; pathInIncomingRequest?: ReadonlyArray<string | number> },
): GatewayGraphQLResponse {
  const message = unavailableMessage(subgraph);
  const extensions = unavailableExtensions(subgraph);
  const fields = fetch.document ? rootResponseNames(fetch.document) : [];
  if (fetch.variables?.representations !== undefined || fields.length === 0 || fields.includes('_entities')) {
    throw new GraphQLError(message, { path: listPrefix(fetch.pathInIncomingRequest ?? []), extensions });
  }
  return { errors: fields.map((field) => ({ message, path: [field], extensions })) };
}

/** The path up to the first list (`@` in the planner's paths): where the entities hang. */
function listPrefix(path: ReadonlyArray<string | number>): Array<string | number> | undefined {
  const end = path.indexOf('@');
  const prefix = end === -1 ? [...path] : path.slice(0, end);
  return prefix.length ? prefix : undefined;
}

/** The response names (alias or name) of the root fields of a fetch's operation, fragments included. */
export function rootResponseNames(document: DocumentNode): string[] {
  const operation = document.definitions.find((definition) => definition.kind === Kind.OPERATION_DEFINITION);
  if (!operation || operation.kind !== Kind.OPERATION_DEFINITION) return [];
  const fragments = new Map<string, SelectionSetNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition.selectionSet);
  }
  const names = new Set<string>();
  const visited = new Set<SelectionSetNode>();
  const collect = (selectionSet: SelectionSetNode | undefined) => {
    if (!selectionSet || visited.has(selectionSet)) return;
    visited.add(selectionSet);
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value !== '__typename') names.add(selection.alias?.value ?? selection.name.value);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) collect(selection.selectionSet);
      else collect(fragments.get(selection.name.value));
    }
  };
  collect(operation.selectionSet);
  return [...names];
}
