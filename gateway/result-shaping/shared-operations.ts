import type { Operation, Schema } from '@apollo/federation-internals';
import type { DefinitionNode, DocumentNode, OperationDefinitionNode } from 'graphql';
import { gatewayRequire } from './gateway-require.js';

/**
 * Apollo Gateway's executor builds the federation `Operation` of every request again, from the
 * request's parsed operation and fragments (`operationFromDocument(apiSchema, { definitions:
 * [operation, ...fragments] }, { validate: false })` in executeQueryPlan.js), only to hand it to
 * result shaping: 5 % of the gateway's CPU on a REST page. Built once (shaping's steps kept with
 * it), the gateway's CPU per REST page fell by about a tenth
 * (bench/results/2026-11-29T1015-rest-page-shared-operations.md).
 * Apollo Server keeps one parsed document per query text, so every request of a document brings
 * the same operation node: the Operation built for it is kept with it (a WeakMap: it goes when
 * Apollo drops the document) and handed out again. Shaping only reads it.
 *
 * Only that call is shared (validation off, no operation name, the operation first); any other
 * goes to Apollo's function as it is. The fragments must be the very nodes the Operation was built
 * from, or it is built again.
 */

type OperationFromDocument = (
  schema: Schema,
  document: DocumentNode,
  options?: { operationName?: string; validate?: boolean },
) => Operation;

/** The module whose export executeQueryPlan.js reads at every call (`(0, federation_internals_1.operationFromDocument)`). */
const operations = gatewayRequire('@apollo/federation-internals/dist/operations.js') as {
  operationFromDocument: OperationFromDocument;
};
const apolloOperationFromDocument = operations.operationFromDocument;
if (typeof apolloOperationFromDocument !== 'function') {
  throw new Error(
    "@apollo/federation-internals' operationFromDocument is not where the gateway expects it (dist/operations.js): check gateway/result-shaping/shared-operations.ts against this version",
  );
}

interface Built {
  fragments: readonly DefinitionNode[];
  operation: Operation;
}

const built = new WeakMap<Schema, WeakMap<OperationDefinitionNode, Built>>();

const sharedOperationFromDocument: OperationFromDocument = (schema, document, options) => {
  const [first, ...fragments] = document.definitions;
  if (options?.validate !== false || options.operationName !== undefined || first?.kind !== 'OperationDefinition') {
    return apolloOperationFromDocument(schema, document, options);
  }
  let bySchema = built.get(schema);
  if (!bySchema) built.set(schema, (bySchema = new WeakMap()));
  const known = bySchema.get(first);
  if (known && sameNodes(known.fragments, fragments)) return known.operation;
  const operation = apolloOperationFromDocument(schema, document, options);
  bySchema.set(first, { fragments, operation });
  return operation;
};

function sameNodes(a: readonly DefinitionNode[], b: readonly DefinitionNode[]): boolean {
  return a.length === b.length && a.every((node, index) => node === b[index]);
}

/** On: executeQueryPlan's Operation is built once per parsed operation; off: per request, as Apollo does. */
export function shareExecutorOperations(on: boolean): void {
  operations.operationFromDocument = on ? sharedOperationFromDocument : apolloOperationFromDocument;
}
