import {
  getArgumentValues,
  getNamedType,
  getNullableType,
  isCompositeType,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
  valueFromASTUntyped,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
  visit,
} from 'graphql';

/** Arguments that bound how many items a field returns. */
const SIZE_ARGUMENTS = new Set(['first', 'last', 'limit', 'pageSize']);

/**
 * Costs are estimates of fields resolved; past this they are all "far too many", and keeping them
 * finite keeps the arithmetic away from Infinity × 0.
 */
const COST_CAP = 1e12;

export interface CostOptions {
  /** Items assumed for a list field whose size no `first`/`last`/`limit`/`pageSize` argument bounds. */
  defaultListSize: number;
  /** The limit: counting stops once it is passed (the answer is then "more than this"). */
  maxCost: number;
  /** What one resolution of a field costs instead of 1, by schema coordinate (field-costs.ts). */
  fieldCosts?: Readonly<Record<string, number>>;
}

/**
 * Federation's entity resolver: a subgraph answers one entity per representation it is sent, so
 * the list is as long as its `representations` argument (a literal or a variable).
 */
const ENTITIES_FIELD = '_entities';
const REPRESENTATIONS_ARGUMENT = 'representations';

/**
 * The cost of one selection set as a function of the list size `m` a connection field above it
 * passes down (the `courses(first: 5) { edges { node } }` pattern): `fixed + perPending × m`.
 * Cost is affine in `m`, so every fragment is measured once whatever spreads it: the walk is
 * linear in the document, however its fragments nest or fan out.
 */
interface Affine {
  fixed: number;
  perPending: number;
}

const NOTHING: Affine = { fixed: 0, perPending: 0 };
const add = (a: number, b: number) => Math.min(COST_CAP, a + b);
const times = (a: number, b: number) => (a === 0 || b === 0 ? 0 : Math.min(COST_CAP, a * b));

/**
 * Fields an operation could resolve: every selected field counted once per item it is resolved for.
 * A field below a list is multiplied by the list's size: its own size argument, or one on the
 * connection field above it, else `defaultListSize`. Introspection (`__schema`, `__type`) is counted
 * like any other field, with the sizes its lists really have: the schema is known, so its cost is
 * the number of values its answer holds (counted on the schema itself, stopping past the limit).
 */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  options: CostOptions,
): number {
  const root = schema.getRootType(operation.operation);
  if (!root) return 0;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const measured = new Map<string, Affine>();
  const inProgress = new Set<string>();
  const flatten = fieldFlattener(fragments);
  // Introspection sits at the root and only adds, so one budget serves all of its fields together.
  let introspectionBudget = options.maxCost + 1;

  const evaluate = (cost: Affine, pending: number) => add(cost.fixed, times(cost.perPending, pending));

  const fragmentCost = (name: string, parent: GraphQLCompositeType): Affine => {
    const known = measured.get(name);
    if (known) return known;
    const fragment = fragments.get(name);
    // Validation refuses unknown fragments and cycles; this only keeps a bad document finite.
    if (!fragment || inProgress.has(name)) return NOTHING;
    inProgress.add(name);
    const cost = walk(fragment.selectionSet, typeNamed(schema, fragment.typeCondition.name.value) ?? parent);
    inProgress.delete(name);
    measured.set(name, cost);
    return cost;
  };

  const fieldCost = (selection: FieldNode, parent: GraphQLCompositeType): Affine => {
    const name = selection.name.value;
    if (parent === root && (name === SchemaMetaFieldDef.name || name === TypeMetaFieldDef.name)) {
      const spent = introspectionCost(schema, selection, flatten, variables, introspectionBudget);
      introspectionBudget = Math.max(0, introspectionBudget - spent);
      return { fixed: spent, perPending: 0 };
    }
    const field = fieldOf(parent, name);
    const namedType = field ? getNamedType(field.type) : undefined;
    const child =
      selection.selectionSet && namedType && isCompositeType(namedType) ? walk(selection.selectionSet, namedType) : NOTHING;
    const ownSize = listSize(selection, field, parent === root, variables);
    // A field that scans (field-costs.ts) costs its weight per resolution instead of 1.
    const own = options.fieldCosts?.[`${parent.name}.${name}`] ?? 1;
    if (field && isListType(getNullableType(field.type))) {
      // A list resolves its children once per item; below it, nothing is pending any more.
      const perItem = add(1, evaluate(child, options.defaultListSize));
      const scan = own - 1;
      return ownSize === undefined
        ? { fixed: scan, perPending: perItem }
        : { fixed: add(scan, times(ownSize, perItem)), perPending: 0 };
    }
    // A connection field's size applies to the first list below it; other fields pass theirs on.
    if (ownSize !== undefined) return { fixed: add(own, evaluate(child, ownSize)), perPending: 0 };
    return { fixed: add(own, child.fixed), perPending: child.perPending };
  };

  const walk = (selectionSet: SelectionSetNode, parent: GraphQLCompositeType): Affine => {
    let total = NOTHING;
    for (const selection of selectionSet.selections) {
      const cost =
        selection.kind === Kind.FIELD
          ? fieldCost(selection, parent)
          : selection.kind === Kind.INLINE_FRAGMENT
            ? walk(selection.selectionSet, typeNamed(schema, selection.typeCondition?.name.value) ?? parent)
            : fragmentCost(selection.name.value, parent);
      total = { fixed: add(total.fixed, cost.fixed), perPending: add(total.perPending, cost.perPending) };
    }
    return total;
  };

  return evaluate(walk(operation.selectionSet, root), options.defaultListSize);
}

/**
 * How many items a list field resolves — or, on a connection field, the list below it — when the
 * document or the schema says: `_entities` one per representation; otherwise a size argument
 * given, else that argument's default in the schema (`aiProvenance(first: Int = 10)`).
 */
function listSize(
  selection: FieldNode,
  field: GraphQLField<unknown, unknown> | undefined,
  atRoot: boolean,
  variables: Record<string, unknown> | undefined,
): number | undefined {
  if (atRoot && selection.name.value === ENTITIES_FIELD) return representationsOf(selection, variables);
  for (const arg of selection.arguments ?? []) {
    const size = SIZE_ARGUMENTS.has(arg.name.value) ? sizeValue(valueFromASTUntyped(arg.value, variables)) : undefined;
    if (size !== undefined) return size;
  }
  for (const arg of field?.args ?? []) {
    const size = SIZE_ARGUMENTS.has(arg.name) ? sizeValue(arg.defaultValue) : undefined;
    if (size !== undefined) return size;
  }
  return undefined;
}

function sizeValue(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.min(COST_CAP, Math.ceil(value)) : undefined;
}

/** Representations an `_entities` field carries (a list coerces a single value to one item). */
function representationsOf(selection: FieldNode, variables: Record<string, unknown> | undefined): number {
  const arg = selection.arguments?.find((candidate) => candidate.name.value === REPRESENTATIONS_ARGUMENT);
  const value = arg ? valueFromASTUntyped(arg.value, variables) : undefined;
  if (Array.isArray(value)) return value.length;
  return value === undefined || value === null ? 0 : 1;
}

/**
 * One place where the variables reach the measures: a size argument's value (its size) or an
 * `_entities` field's `representations` (how many). Read with the same functions the walks use, so
 * two variable sets that read the same here measure the same (operation-measures.ts keys on it).
 */
export interface SizeInput {
  value: ValueNode;
  read(variables: Record<string, unknown> | undefined): number | undefined;
}

/** Every size argument and `_entities` representations argument of the document, in its order. */
export function sizeInputsOf(document: DocumentNode): SizeInput[] {
  const inputs: SizeInput[] = [];
  visit(document, {
    Field(field) {
      for (const arg of field.arguments ?? []) {
        if (SIZE_ARGUMENTS.has(arg.name.value)) {
          inputs.push({ value: arg.value, read: (variables) => sizeValue(valueFromASTUntyped(arg.value, variables)) });
        }
      }
      if (field.name.value === ENTITIES_FIELD) {
        const arg = field.arguments?.find((candidate) => candidate.name.value === REPRESENTATIONS_ARGUMENT);
        if (arg) inputs.push({ value: arg.value, read: (variables) => representationsOf(field, variables) });
      }
    },
  });
  return inputs;
}

/**
 * Representations the operation's `_entities` fields carry in all, each field counted once however
 * often fragments spread it (execution merges them): what a subgraph's entity resolvers would be
 * asked for, checked against QUERY_MAX_REPRESENTATIONS before anything resolves.
 */
export function representationCount(
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  let count = 0;
  for (const field of fieldFlattener(fragments)(operation.selectionSet)) {
    if (field.name.value === ENTITIES_FIELD) count += representationsOf(field, variables);
  }
  return count;
}

/**
 * The fields a selection set selects, its fragments (spread or inline) merged in, each fragment
 * flattened once: the same field node reached through several spreads is one field, as in
 * execution, so a document of fragments spreading each other twice stays as small as it is.
 */
type Flattener = (selectionSet: SelectionSetNode) => readonly FieldNode[];

function fieldFlattener(fragments: ReadonlyMap<string, FragmentDefinitionNode>): Flattener {
  const flattened = new Map<SelectionSetNode, readonly FieldNode[]>();
  const flatten: Flattener = (selectionSet) => {
    const known = flattened.get(selectionSet);
    if (known) return known;
    // Marked before the walk, so a cyclic document (refused by validation anyway) ends.
    flattened.set(selectionSet, []);
    const fields = new Set<FieldNode>();
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) fields.add(selection);
      else {
        const inner =
          selection.kind === Kind.INLINE_FRAGMENT ? selection.selectionSet : fragments.get(selection.name.value)?.selectionSet;
        for (const field of inner ? flatten(inner) : []) fields.add(field);
      }
    }
    const result = [...fields];
    flattened.set(selectionSet, result);
    return result;
  };
  return flatten;
}

/**
 * Values an introspection field's answer holds, counted on the schema with graphql-js's own
 * introspection resolvers (no I/O: the schema is in memory). Every value costs at least one, so
 * the count stops after `budget` steps, whatever the document asks.
 */
function introspectionCost(
  schema: GraphQLSchema,
  selection: FieldNode,
  flatten: Flattener,
  variables: Record<string, unknown> | undefined,
  budget: number,
): number {
  const info = { schema } as GraphQLResolveInfo;
  let spent = 0;
  const resolve = (field: GraphQLField<unknown, unknown>, node: FieldNode, source: unknown): unknown => {
    let args: Record<string, unknown>;
    try {
      args = getArgumentValues(field, node, variables);
    } catch {
      return null;
    }
    return field.resolve ? field.resolve(source, args, undefined, info) : (source as Record<string, unknown>)[field.name];
  };
  const visit = (node: FieldNode, field: GraphQLField<unknown, unknown>, source: unknown): void => {
    const value = resolve(field, node, source);
    const type = getNamedType(field.type);
    const items = Array.isArray(value) ? value : [value];
    for (const item of items) {
      if (spent >= budget) return;
      spent += 1;
      if (item === null || item === undefined || !node.selectionSet || !isObjectType(type)) continue;
      for (const child of flatten(node.selectionSet)) {
        const childField = type.getFields()[child.name.value];
        // __typename (and a name validation refused) is one value that needs no resolving.
        if (childField) visit(child, childField, item);
        else spent += 1;
      }
    }
  };
  visit(selection, selection.name.value === SchemaMetaFieldDef.name ? SchemaMetaFieldDef : TypeMetaFieldDef, undefined);
  return spent;
}

function typeNamed(schema: GraphQLSchema, name: string | undefined): GraphQLCompositeType | undefined {
  const type = name ? schema.getType(name) : undefined;
  return type && isCompositeType(type) ? type : undefined;
}

function fieldOf(parent: GraphQLCompositeType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (name === TypeNameMetaFieldDef.name) return TypeNameMetaFieldDef;
  if (isObjectType(parent) || isInterfaceType(parent)) return parent.getFields()[name];
  return undefined;
}
