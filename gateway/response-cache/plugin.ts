import { HeaderMap, type ApolloServerPlugin, type GraphQLResponse } from '@apollo/server';
import { canonicalJson } from '../../platform/text/canonical-json.js';
import type { GatewayContext } from '../forwarding.js';
import { Kind, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode } from 'graphql';
import { answerDependencies } from './answer-dependencies.js';
import { decide, entryTags, mutationTags, type OperationShape } from './cache-policy.logic.js';
import { operationShape } from './document.js';
import type { PendingEntry, ResponseCache } from './response-cache.js';
import { StoredData } from './stored-answer.js';

/**
 * The response cache in Apollo's request pipeline, so /graphql and the execute port (REST-compat)
 * share it. Its hooks run after parsing, validation, the limits and the operation rules, so a
 * cached answer is only ever served to an operation that would have been run; a catalog mutation
 * drops what it changed before its answer is sent, so the writer reads its own write.
 */
export function responseCachePlugin(cache: ResponseCache, nonCatalog: ReadonlySet<string>): ApolloServerPlugin<GatewayContext> {
  return {
    async requestDidStart() {
      let shape: OperationShape | undefined;
      let pending: PendingEntry | undefined;
      let read: { operation: OperationDefinitionNode; fragments: FragmentDefinitionNode[] } | undefined;
      return {
        async responseForOperation(request) {
          if (!request.operation) return null;
          shape = operationShape({
            document: request.document,
            operation: request.operation,
            schema: request.schema,
            variables: request.request.variables,
            nonCatalog,
          });
          if (shape.kind === 'mutation') {
            read = operationRead(request.operation, request.document.definitions);
            return null;
          }
          if (!decide(shape).cacheable) {
            cache.count('bypass');
            return null;
          }
          const { principal, forward } = request.contextValue;
          const queryHash = request.queryHash;
          if (!queryHash) {
            cache.count('bypass');
            return null;
          }
          let variables: string;
          try {
            variables = canonicalJson(declaredVariables(request.operation, request.request.variables));
          } catch {
            cache.count('bypass');
            return null;
          }
          const found = await cache.lookup({
            tenantId: principal.tenantId,
            scopes: principal.scopes,
            queryHash,
            operationName: request.operationName,
            variables,
            acceptLanguage: forward['accept-language'] ?? '',
          });
          if ('pending' in found) {
            pending = found.pending;
            read = operationRead(request.operation, request.document.definitions);
            return null;
          }
          // Sent as stored (stored-answer.ts): no parse here, no serialisation at the door.
          const data = new StoredData(found.body) as unknown as Record<string, unknown>;
          return { http: { headers: new HeaderMap(), status: undefined }, body: { kind: 'single', singleResult: { data } } };
        },
        async willSendResponse(request) {
          const tenantId = request.contextValue.principal?.tenantId;
          if (!shape || !tenantId) return;
          if (shape.kind === 'mutation' && shape.catalogMutation) {
            // Only a mutation that took effect drops anything: a refused one (a token without the
            // scope, a failed precondition) would otherwise let any caller empty its tenant's cache.
            // Awaited: the writer's next read must not find what this mutation changed.
            const body = request.response.body;
            if (!tookEffect(body)) return;
            // A write drops what it changed, named by its arguments and its answer (mutationTags).
            const data = body.kind === 'single' ? body.singleResult.data : undefined;
            const found =
              read && data
                ? answerDependencies({ schema: request.schema, ...read, variables: request.request.variables, data })
                : undefined;
            await cache.invalidate(mutationTags(tenantId, shape, found?.ids ?? []), 'mutation');
            return;
          }
          if (!pending) return;
          const entry = pending;
          pending = undefined;
          const body = request.response.body;
          const data = body.kind === 'single' && !body.singleResult.errors?.length ? body.singleResult.data : undefined;
          if (!read || !data) {
            // Waiters for this key look up on their own (an answer with errors is never cached).
            cache.abandon(entry);
            return;
          }
          try {
            // What the answer depends on, read from the answer: never from the document's text.
            const found = answerDependencies({ schema: request.schema, ...read, variables: request.request.variables, data });
            await cache.store(entry, JSON.stringify({ data }), entryTags(tenantId, shape, data, found));
          } catch {
            // Storing is best effort: the answer goes out whatever happened to its copy.
            cache.abandon(entry);
          }
        },
      };
    },
  };
}

function operationRead(
  operation: OperationDefinitionNode,
  definitions: DocumentNode['definitions'],
): { operation: OperationDefinitionNode; fragments: FragmentDefinitionNode[] } {
  return { operation, fragments: definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION) };
}

/**
 * Whether a mutation's answer says it may have changed something: it has no errors, or at least one
 * of its root fields has a value. A mutation that failed after the catalog committed it still
 * publishes its event, which every replica follows (catalog-events.ts).
 */
function tookEffect(body: GraphQLResponse['body']): boolean {
  if (body.kind !== 'single') return true;
  const { errors, data } = body.singleResult;
  if (!errors?.length) return true;
  return data !== null && data !== undefined && Object.values(data).some((value) => value !== null && value !== undefined);
}

/**
 * The variables the operation declares: only they can change its answer (the executor ignores the
 * others), so only they go into the key. An undeclared extra variable made a new key each time
 * (issue #33); it is left out, not refused, so no client that sends one breaks.
 */
export function declaredVariables(
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    if (variables && Object.hasOwn(variables, name)) out[name] = variables[name];
  }
  return out;
}
