import {
  Kind,
  parse,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { ID_FIELDS, type IdField, type OperationShape } from './cache-policy.logic.js';

/**
 * Field coordinates (`Type.field`) of the supergraph that the catalog does not resolve, e.g.
 * `Course.aiProvenance` or every field of the AI subgraph's own types. An operation selecting one
 * is never cached: its answer holds AI data (provenance, review text: PHI).
 */
export function nonCatalogFields(supergraphSdl: string): Set<string> {
  const out = new Set<string>();
  for (const definition of parse(supergraphSdl).definitions) {
    if (
      definition.kind !== Kind.OBJECT_TYPE_DEFINITION &&
      definition.kind !== Kind.OBJECT_TYPE_EXTENSION &&
      definition.kind !== Kind.INTERFACE_TYPE_DEFINITION
    ) {
      continue;
    }
    const typeGraphs = graphsOf(definition.directives ?? [], 'join__type');
    for (const field of definition.fields ?? []) {
      const fieldGraphs = graphsOf(field.directives ?? [], 'join__field');
      const graphs = fieldGraphs.length > 0 ? fieldGraphs : typeGraphs;
      if (!graphs.includes('CATALOG')) out.add(`${definition.name.value}.${field.name.value}`);
    }
  }
  return out;
}

function graphsOf(
  directives: ReadonlyArray<{ name: { value: string }; arguments?: ReadonlyArray<{ name: { value: string }; value: unknown }> }>,
  name: string,
): string[] {
  const graphs: string[] = [];
  for (const directive of directives) {
    if (directive.name.value !== name) continue;
    const graph = directive.arguments?.find((a) => a.name.value === 'graph')?.value as
      { kind: string; value?: string } | undefined;
    if (graph?.kind === Kind.ENUM && graph.value) graphs.push(graph.value);
  }
  return graphs;
}

/** Where an id argument's value comes from: written in the document, or a variable. */
type IdArgument = { field: IdField } & ({ literal: string } | { variable: string });

/** What an operation's document says, whatever its variables: computed once per parsed document. */
type DocumentShape = Omit<OperationShape, 'argumentIds'> & { idArguments: IdArgument[] };

/**
 * Apollo hands every request with the same query text the same parsed document (its document
 * store), so the walk below runs once per document, schema and operation, not once per request.
 */
const shapes = new WeakMap<
  DocumentNode,
  { schema: GraphQLSchema; nonCatalog: ReadonlySet<string>; byOperation: Map<OperationDefinitionNode, DocumentShape> }
>();

/**
 * What the cache needs to know of an operation: its kind, root fields (through fragments), whether
 * it reaches a field outside the catalog, and the id arguments it passes (their values from the
 * variables of this request). Which entities an answer depends on is read from the answer
 * (answer-dependencies.ts), never from here: the text cannot say what @skip/@include left out.
 */
export function operationShape(input: {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  schema: GraphQLSchema;
  variables: Record<string, unknown> | undefined;
  nonCatalog: ReadonlySet<string>;
}): OperationShape {
  const { idArguments, ...shape } = documentShape(input);
  const variables = input.variables ?? {};
  const argumentIds: Array<{ field: IdField; id: string }> = [];
  for (const argument of idArguments) {
    const value = 'literal' in argument ? argument.literal : variables[argument.variable];
    if (typeof value === 'string') argumentIds.push({ field: argument.field, id: value });
  }
  return { ...shape, argumentIds };
}

function documentShape(input: {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  schema: GraphQLSchema;
  nonCatalog: ReadonlySet<string>;
}): DocumentShape {
  let memo = shapes.get(input.document);
  if (!memo || memo.schema !== input.schema || memo.nonCatalog !== input.nonCatalog) {
    memo = { schema: input.schema, nonCatalog: input.nonCatalog, byOperation: new Map() };
    shapes.set(input.document, memo);
  }
  let shape = memo.byOperation.get(input.operation);
  if (!shape) {
    shape = walkDocument(input);
    memo.byOperation.set(input.operation, shape);
  }
  return shape;
}

/** One walk of the document with the API schema's type information. */
function walkDocument(input: {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  schema: GraphQLSchema;
  nonCatalog: ReadonlySet<string>;
}): DocumentShape {
  const { document, operation, schema, nonCatalog } = input;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const rootFields = rootFieldNames(operation.selectionSet, fragments);
  const rootType = operation.operation === 'query' ? 'Query' : operation.operation === 'mutation' ? 'Mutation' : 'Subscription';

  let selectsNonCatalogField = false;
  const idArguments: IdArgument[] = [];
  const typeInfo = new TypeInfo(schema);
  // Every operation and fragment of the document is walked, not only the one run: a field or a
  // missing id in an unused part can only make the decision more cautious.
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field(node) {
        const parent = typeInfo.getParentType();
        if (parent && nonCatalog.has(`${parent.name}.${node.name.value}`)) selectsNonCatalogField = true;
        for (const argument of node.arguments ?? []) {
          const name = argument.name.value;
          if (!(name in ID_FIELDS)) continue;
          const field = name as IdField;
          if (argument.value.kind === Kind.STRING) idArguments.push({ field, literal: argument.value.value });
          else if (argument.value.kind === Kind.VARIABLE) idArguments.push({ field, variable: argument.value.name.value });
        }
      },
    }),
  );
  const catalogMutation = operation.operation === 'mutation' && rootFields.some((f) => !nonCatalog.has(`${rootType}.${f}`));
  return {
    kind: operation.operation,
    rootFields,
    selectsNonCatalogField,
    idArguments,
    catalogMutation,
  };
}

function rootFieldNames(selectionSet: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>): string[] {
  const names = new Set<string>();
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value !== '__typename') names.add(selection.name.value);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        walk(selection.selectionSet);
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        if (fragment && !seen.has(name)) {
          seen.add(name);
          walk(fragment.selectionSet);
        }
      }
    }
  };
  walk(selectionSet);
  return [...names];
}
