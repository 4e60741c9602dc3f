import {
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  visit,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValueNode,
} from 'graphql';
import { operationCost, representationCount, sizeInputsOf, type CostOptions, type SizeInput } from './query-cost.js';

/** Variable values kept per operation: enough for a client's few page sizes, bounded against a flood. */
const MAX_KEYS_PER_OPERATION = 64;

/** What is known of one operation of a parsed (and cached) document. */
interface OperationEntry {
  schema: GraphQLSchema;
  /** Where variables reach the measures; undefined when the operation must be measured every time. */
  inputs: readonly SizeInput[] | undefined;
  costs: Map<string, number>;
  representations: Map<string, number>;
}

/**
 * The cost and the `_entities` representations of an operation, measured once per document and
 * per values of the variables the measures read (size arguments, representations), not on every
 * request: Apollo Server hands every request of the same text the same parsed document, and the
 * walk was 1-2 % of each process's busy time under load (bench/README.md).
 *
 * Only the measures' own inputs make the key: two requests whose variables differ elsewhere (a
 * course id, a title) share it. An operation that introspects is measured every time: its cost
 * reads any argument of the introspection fields.
 */
export class OperationMeasures {
  private readonly entries = new WeakMap<OperationDefinitionNode, OperationEntry>();

  constructor(private readonly options: CostOptions) {}

  /** The measures of one request's operation: each taken at most once per document and key. */
  of(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation: OperationDefinitionNode,
    variables: Record<string, unknown> | undefined,
  ): { cost(): number; representations(): number } {
    const entry = this.entryOf(schema, document, operation);
    const key = entry.inputs ? keyOf(entry.inputs, variables) : undefined;
    const take = (known: Map<string, number>, measure: () => number) =>
      key === undefined ? measure() : remembered(known, key, measure);
    return {
      cost: () => take(entry.costs, () => operationCost(schema, document, operation, variables, this.options)),
      representations: () => take(entry.representations, () => representationCount(document, operation, variables)),
    };
  }

  private entryOf(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): OperationEntry {
    const known = this.entries.get(operation);
    // A new schema (the gateway's supergraph changed) may size the same text differently.
    if (known && known.schema === schema) return known;
    const entry: OperationEntry = {
      schema,
      inputs: introspects(document) ? undefined : sizeInputsOf(document).filter((input) => holdsVariable(input.value)),
      costs: new Map(),
      representations: new Map(),
    };
    this.entries.set(operation, entry);
    return entry;
  }
}

function remembered(known: Map<string, number>, key: string, measure: () => number): number {
  const value = known.get(key);
  if (value !== undefined) return value;
  const measured = measure();
  if (known.size < MAX_KEYS_PER_OPERATION) known.set(key, measured);
  return measured;
}

/** The values the measures read from the variables, in the document's order: the memo's key. */
function keyOf(inputs: readonly SizeInput[], variables: Record<string, unknown> | undefined): string {
  let key = '';
  for (const input of inputs) key += `${input.read(variables) ?? '-'},`;
  return key;
}

function holdsVariable(value: ValueNode): boolean {
  switch (value.kind) {
    case Kind.VARIABLE:
      return true;
    case Kind.LIST:
      return value.values.some(holdsVariable);
    case Kind.OBJECT:
      return value.fields.some((field) => holdsVariable(field.value));
    default:
      return false;
  }
}

function introspects(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Field(node) {
      if (node.name.value === SchemaMetaFieldDef.name || node.name.value === TypeMetaFieldDef.name) found = true;
    },
  });
  return found;
}
