import type {
  CompositeType,
  FieldSelection,
  NamedType,
  Operation,
  Schema,
  Selection,
  SelectionSet,
  Type,
} from '@apollo/federation-internals';
import type { GraphQLError } from 'graphql';
import { compiledFill, type Fill } from './compiled-fill.js';
import { gatewayRequire } from './gateway-require.js';
import { shareExecutorOperations } from './shared-operations.js';

/**
 * Apollo Gateway's result shaping (`computeResponse` in @apollo/gateway's resultShaping.js): after
 * the query plan ran, the subgraphs' merged answers are copied into the answer the client asked
 * for — its fields in its order, its aliases, @skip/@include applied, `__typename` filled, every
 * leaf checked against its type and a null in a non-null position bubbled up with its error.
 *
 * Measured on the wide page (50 courses with every field, their versions and provenance: ~240 KB),
 * Apollo's version is ~70 % of the gateway's CPU a page: it asks the operation's objects again for
 * every field of every object (`selections()`, `appliedDirectivesOf` twice for @skip/@include,
 * `responseName()`, the field's type and whether it is introspection), allocates a result object
 * per value and reaches every helper through a CommonJS re-export getter.
 *
 * This is the same algorithm with the per-field questions answered once per selection set and
 * request (the variables of @skip/@include are the request's), the helpers bound once and the
 * per-value results kept in two flags instead of an object. Each field's type is turned into a
 * writer once (non-null, list, object or which leaf), and the two lookups by name a field costs in
 * Apollo's (what the answer already holds there, whether the input's value is its own) are skipped
 * where their answer is known: a new object filled by fields only, a plain object and a name no
 * object inherits. A new object filled by plain fields only (most of an answer) runs compiled code
 * with the names written in it (compiled-fill.ts). On the bench's wide page that took shaping from
 * 1.6-2.0 to 0.6-1.0 ms a page, against Apollo's 8-12 ms (bench/result-shaping-cost.ts,
 * bench/results/2026-11-29T0919-result-shaping-compiled.md). What it answers — data, the order of
 * its keys, null-prototype objects, error messages and paths, the asserts it throws — is Apollo's;
 * test/unit/gateway/result-shaping.test.ts compares the two on every case.
 */

/** The federation-internals instance Apollo Gateway itself loaded (its classes and schema objects). */
const fi = gatewayRequire('@apollo/federation-internals') as typeof import('@apollo/federation-internals');
const {
  ERRORS,
  isCompositeType,
  isCustomScalarType,
  isListType,
  isNonNullType,
  isObjectType,
  isSubtype,
  isValidLeafValue,
  Variable,
} = fi;
/** Apollo's assert (its errors are what a failed one throws), typed as an assertion. */
const assert: (condition: unknown, message: string | (() => string)) => asserts condition = fi.assert;
const TYPENAME = fi.typenameFieldName;

/** Apollo Gateway's module whose export its query plan executor calls for every answer. */
const apolloShaping = gatewayRequire('@apollo/gateway/dist/resultShaping.js') as { computeResponse: typeof computeResponse };
const apolloComputeResponse = apolloShaping.computeResponse;
if (typeof apolloComputeResponse !== 'function') {
  throw new Error(
    "@apollo/gateway's result shaping is not where the gateway expects it (dist/resultShaping.js, computeResponse): check gateway/result-shaping/result-shaping.ts against this version",
  );
}

/** `lean`: this file's shaping; `apollo`: Apollo Gateway's own (GATEWAY_RESULT_SHAPING). */
export type ResultShaping = 'lean' | 'apollo';

/**
 * Chooses the shaping Apollo Gateway's executor calls, for the whole process: it reads the
 * module's export at every call (`(0, resultShaping_1.computeResponse)(…)` in executeQueryPlan.js;
 * test/unit/gateway/result-shaping.test.ts checks that it still does). `lean` also has the executor
 * build each document's Operation once (shared-operations.ts), so its steps are kept across
 * requests; `apollo` is Apollo's code path throughout.
 */
export function useResultShaping(kind: ResultShaping): void {
  apolloShaping.computeResponse = kind === 'lean' ? computeResponse : apolloComputeResponse;
  shareExecutorOperations(kind === 'lean');
}

export interface ShapingInput {
  operation: Operation;
  variables?: Record<string, unknown>;
  input: Record<string, unknown> | null | undefined;
  introspectionHandling: (selection: FieldSelection) => unknown;
}

export interface ShapingOutput {
  data: Record<string, unknown> | null | undefined;
  errors: GraphQLError[];
}

type Path = Array<string | number>;

/**
 * Apollo's `updateOutputValue` for one field, built from the field's type when its selection set
 * is first met in a request: the value already in the answer (another selection of the same
 * response name) merged with the subgraphs' value. Apollo asks the type what it is (non-null,
 * list, composite, which scalar) again for every value and allocates a message closure per assert;
 * a writer has asked once, so each value costs only its own checks. Sets `shaping.invalid` and
 * `shaping.hasErrors` as `updateOutputValue` does.
 */
type Writer = (shaping: Shaping, outputValue: unknown, inputValue: unknown, path: Path, parentType: CompositeType) => unknown;

/** One selection of a selection set, with what every object it is applied to asks of it. */
type Step =
  | {
      kind: 'field';
      responseName: string;
      isTypename: boolean;
      isIntrospection: boolean;
      selection: FieldSelection;
      write: Writer;
      /**
       * No plain object inherits this response name from Object.prototype (`title`, unlike
       * `constructor`): on a plain object, a value found under it is the object's own.
       */
      neverInherited: boolean;
    }
  | {
      kind: 'fragment';
      typeCondition: CompositeType | undefined;
      selectionSet: SelectionSet;
      /** Whether the condition applies, by `__typename` (or by parent type when there is none). */
      applies: Map<string | NamedType, boolean>;
    };

type FieldStep = Extract<Step, { kind: 'field' }>;

interface Shaping {
  schema: Schema;
  variables: Record<string, unknown>;
  errors: GraphQLError[];
  introspectionHandling: ShapingInput['introspectionHandling'];
  /** Per selection set: its steps, @skip/@include already applied (this request's variables). */
  steps: Map<SelectionSet, Steps>;
  /** Set by each `updateOutputValue`: the value made its parent invalid (null in a non-null place), errors were recorded. */
  invalid: boolean;
  hasErrors: boolean;
}

const OK = 0;
const NULL_BUBBLE_UP = 1;

/**
 * The answer's objects inherit nothing, as Apollo's (created with a null prototype), so a response
 * name such as `constructor` or `__proto__` is only ever an own field. Theirs are V8 dictionaries,
 * though: every field stored is a hash insert and JSON.stringify walks them on its slow path. Ours
 * share one empty, frozen prototype that has no prototype itself — the same nothing to inherit —
 * and stay fast objects: JSON.stringify of the wide page's answer takes half the time.
 */
function Inherits(this: object) {}
Inherits.prototype = Object.freeze(Object.create(null) as object);
const emptyObject = () => new (Inherits as unknown as new () => Record<string, unknown>)();

export function computeResponse({ operation, variables, input, introspectionHandling }: ShapingInput): ShapingOutput {
  if (!input) return { data: input, errors: [] };
  const schema = operation.schema();
  const shaping: Shaping = {
    schema,
    variables: { __proto__: null, ...operation.collectDefaultedVariableValues(), ...variables } as Record<string, unknown>,
    errors: [],
    introspectionHandling,
    steps: stepsKeptFor(operation),
    invalid: false,
    hasErrors: false,
  };
  const data = emptyObject();
  const result = applySelectionSet(
    shaping,
    input,
    operation.selectionSet,
    data,
    [],
    schema.schemaDefinition.rootType(operation.rootKind)!,
    true,
  );
  return { data: result === NULL_BUBBLE_UP ? null : data, errors: shaping.errors };
}

/**
 * The steps of an operation's selection sets, kept for every request of it when they cannot depend
 * on the request: the operation has no @skip or @include (null: it has, each request builds its
 * own). With the executor's Operation shared per document (shared-operations.ts) the same
 * Operation comes back, so selection sets, writers and compiled fills are looked up, not rebuilt.
 */
const keptSteps = new WeakMap<Operation, Map<SelectionSet, Steps> | null>();

function stepsKeptFor(operation: Operation): Map<SelectionSet, Steps> {
  let steps = keptSteps.get(operation);
  if (steps === undefined) {
    steps = hasConditions(operation.selectionSet, operation.schema(), new Set()) ? null : new Map();
    keptSteps.set(operation, steps);
  }
  return steps ?? new Map();
}

/** Whether any selection below carries @skip or @include (each fragment's selection set visited once). */
function hasConditions(selectionSet: SelectionSet, schema: Schema, visited: Set<SelectionSet>): boolean {
  if (visited.has(selectionSet)) return false;
  visited.add(selectionSet);
  for (const selection of selectionSet.selections()) {
    const element = selection.element;
    if (element.appliedDirectivesOf(schema.skipDirective()).length > 0) return true;
    if (element.appliedDirectivesOf(schema.includeDirective()).length > 0) return true;
    if (selection.selectionSet && hasConditions(selection.selectionSet, schema, visited)) return true;
  }
  return false;
}

interface Steps {
  list: Step[];
  /** Only fields, each response name once: applied to a new object, no step finds its name already written. */
  fieldsOnce: boolean;
  /** Plain fields only (no __typename, no introspection), each once: a new object is filled by compiled code. */
  fill?: { run: Fill<Shaping, CompositeType>; writers: Writer[] };
}

function stepsOf(shaping: Shaping, selectionSet: SelectionSet): Steps {
  let steps = shaping.steps.get(selectionSet);
  if (!steps) {
    const list: Step[] = [];
    for (const selection of selectionSet.selections()) {
      if (!shouldSkip(selection, shaping.variables, shaping.schema)) list.push(stepOf(selection, shaping.schema));
    }
    const names = new Set(list.map((step) => (step.kind === 'field' ? step.responseName : undefined)));
    steps = { list, fieldsOnce: !names.has(undefined) && names.size === list.length };
    const fields = list.filter((step): step is FieldStep => step.kind === 'field' && !step.isTypename && !step.isIntrospection);
    if (steps.fieldsOnce && fields.length === list.length) {
      steps.fill = { run: compiledFill(fields), writers: fields.map((field) => field.write) };
    }
    shaping.steps.set(selectionSet, steps);
  }
  return steps;
}

function stepOf(selection: Selection, schema: Schema): Step {
  if (selection.kind === 'FieldSelection') {
    const field = selection.element;
    return {
      kind: 'field',
      responseName: field.responseName(),
      isTypename: field.name === TYPENAME,
      isIntrospection: field.definition.isSchemaIntrospectionField(),
      selection,
      write: writerOf(schema, field.definition.type!, selection.selectionSet),
      neverInherited: !(field.responseName() in Object.prototype),
    };
  }
  return {
    kind: 'fragment',
    typeCondition: selection.element.typeCondition,
    selectionSet: selection.selectionSet,
    applies: new Map(),
  };
}

function shouldSkip(selection: Selection, variables: Record<string, unknown>, schema: Schema): boolean {
  const element = selection.element;
  const skip = element.appliedDirectivesOf(schema.skipDirective())[0];
  const include = element.appliedDirectivesOf(schema.includeDirective())[0];
  return Boolean((skip && ifValue(skip, variables)) || (include && !ifValue(include, variables)));
}

function ifValue(
  directive: { arguments(): Record<string, unknown>; toString(): string },
  variables: Record<string, unknown>,
): boolean {
  const ifArg = directive.arguments().if;
  if (ifArg instanceof Variable) {
    const value = variables[ifArg.name];
    assert(
      value !== undefined && typeof value === 'boolean',
      () => `Unexpected value ${String(value)} for variable ${ifArg} of ${directive}`,
    );
    return value as boolean;
  }
  return ifArg as boolean;
}

function applySelectionSet(
  shaping: Shaping,
  input: Record<string, unknown>,
  selectionSet: SelectionSet,
  output: Record<string, unknown>,
  path: Path,
  parentType: CompositeType,
  /** `output` was created for this call: nothing is in it yet. */
  outputIsNew = false,
): typeof OK | typeof NULL_BUBBLE_UP {
  const steps = stepsOf(shaping, selectionSet);
  // The two lookups by name Apollo makes per field (what the answer already holds, whether the
  // input's value is its own) are the hottest lines of shaping: skipped where the answer is known.
  const nothingWritten = outputIsNew && steps.fieldsOnce;
  const prototype = Object.getPrototypeOf(input) as unknown;
  const plainInput = prototype === Object.prototype || prototype === null;
  if (nothingWritten && steps.fill) {
    return steps.fill.run(shaping, input, output, path, parentType, plainInput, steps.fill.writers);
  }
  for (const step of steps.list) {
    if (step.kind === 'fragment') {
      if (fragmentApplies(shaping, step, input, parentType)) {
        const result = applySelectionSet(shaping, input, step.selectionSet, output, path, step.typeCondition ?? parentType);
        if (result === NULL_BUBBLE_UP) return NULL_BUBBLE_UP;
      }
      continue;
    }
    const { responseName } = step;
    const outputValue = nothingWritten ? undefined : output[responseName];
    if (step.isIntrospection) {
      if (outputValue === undefined) output[responseName] = shaping.introspectionHandling(step.selection);
      continue;
    }
    // Apollo's `Object.hasOwn(input, name) ? (input[name] ?? null) : null`.
    let inputValue = input[responseName];
    if (inputValue === undefined || inputValue === null) inputValue = null;
    else if (!(plainInput && step.neverInherited) && !Object.hasOwn(input, responseName)) inputValue = null;
    if (step.isTypename) {
      if (outputValue === undefined) {
        if (inputValue === null && responseName !== TYPENAME) inputValue = input[TYPENAME] ?? null;
        const type = typeof inputValue === 'string' ? (shaping.schema.type(inputValue) ?? parentType) : parentType;
        if (!isObjectType(type)) return NULL_BUBBLE_UP;
        output[responseName] = type.name;
      }
      continue;
    }
    path.push(responseName);
    output[responseName] = step.write(shaping, outputValue, inputValue, path, parentType);
    path.pop();
    if (shaping.invalid) return NULL_BUBBLE_UP;
  }
  return OK;
}

function fragmentApplies(
  shaping: Shaping,
  step: Extract<Step, { kind: 'fragment' }>,
  input: Record<string, unknown>,
  parentType: CompositeType,
): boolean {
  const typename = input[TYPENAME];
  assert(!typename || typeof typename === 'string', () => `Got unexpected value for __typename: ${typename}`);
  const { typeCondition } = step;
  if (!typeCondition) return true;
  // Keyed by the typename when there is one (the schema maps it to one type), else by the parent type.
  const key = typename ? (typename as string) : parentType;
  let applies = step.applies.get(key);
  if (applies === undefined) {
    if (typename) {
      const type = shaping.schema.type(typename as string);
      applies = !!type && isSubtype(typeCondition, type);
    } else {
      applies = isSubtype(typeCondition, parentType);
    }
    step.applies.set(key, applies);
  }
  return applies;
}

/** The writer of a field's values, by its type; list items get the writer of the item type. */
function writerOf(schema: Schema, type: Type, selectionSet: SelectionSet | undefined): Writer {
  if (isNonNullType(type)) return nonNullWriter(writerOf(schema, type.ofType, selectionSet), type.ofType, selectionSet);
  if (isListType(type)) return listWriter(writerOf(schema, type.ofType, selectionSet), type, selectionSet);
  if (isCompositeType(type)) return objectWriter(type, selectionSet);
  return leafWriter(schema, type, selectionSet);
}

/**
 * What every value starts with in Apollo's `updateOutputValue`: the flags cleared, and whether the
 * value already in the answer stands (a null, or a leaf some other selection wrote).
 */
function keepsExisting(shaping: Shaping, outputValue: unknown, inputValue: unknown, hasSelectionSet: boolean): boolean {
  if (inputValue === undefined) assert(false, 'Should not pass undefined for `inputValue` to this method');
  shaping.invalid = false;
  shaping.hasErrors = false;
  return outputValue === null || (outputValue !== undefined && !hasSelectionSet);
}

/** A null from the inner type makes this value invalid (its parent becomes null), with one error. */
function nonNullWriter(inner: Writer, ofType: Type, selectionSet: SelectionSet | undefined): Writer {
  const hasSelectionSet = Boolean(selectionSet);
  return (shaping, outputValue, inputValue, path, parentType) => {
    if (keepsExisting(shaping, outputValue, inputValue, hasSelectionSet)) return outputValue;
    const updated = inner(shaping, outputValue, inputValue, path, parentType);
    if (updated === null) {
      if (!shaping.hasErrors) {
        shaping.errors.push(
          ERRORS.INVALID_GRAPHQL.err(`Cannot return null for non-nullable ${lastElementDescription(path, ofType, parentType)}.`, {
            path: Array.from(path),
          }),
        );
      }
      shaping.invalid = true;
      shaping.hasErrors = true;
      return null;
    }
    shaping.invalid = false;
    shaping.hasErrors = false;
    return updated;
  };
}

function listWriter(item: Writer, type: Extract<Type, { kind: 'ListType' }>, selectionSet: SelectionSet | undefined): Writer {
  const hasSelectionSet = Boolean(selectionSet);
  return (shaping, outputValue, inputValue, path, parentType) => {
    if (keepsExisting(shaping, outputValue, inputValue, hasSelectionSet)) return outputValue;
    if (inputValue === null) return null;
    if (!Array.isArray(inputValue)) {
      assert(false, () => `Invalid non-list value ${inputValue} returned by subgraph for list type ${type}`);
    }
    if (outputValue !== undefined && !Array.isArray(outputValue)) {
      assert(false, () => `Invalid non-list value ${outputValue} returned by subgraph for list type ${type}`);
    }
    const inputList = inputValue as unknown[];
    const existing = outputValue as unknown[] | undefined;
    const length = existing === undefined ? inputList.length : existing.length;
    if (inputList.length !== length) {
      assert(false, () => `[${inputList}].length (${inputList.length}) !== [${existing}].length (${length})`);
    }
    let shouldNullify = false;
    let hasErrors = false;
    const updated = new Array<unknown>(length);
    for (let index = 0; index < length; index++) {
      path.push(index);
      updated[index] = item(shaping, existing === undefined ? undefined : existing[index], inputList[index], path, parentType);
      path.pop();
      shouldNullify ||= shaping.invalid;
      hasErrors ||= shaping.hasErrors;
    }
    shaping.invalid = false;
    shaping.hasErrors = hasErrors;
    return shouldNullify ? null : updated;
  };
}

function objectWriter(type: CompositeType, selectionSet: SelectionSet | undefined): Writer {
  const hasSelectionSet = Boolean(selectionSet);
  // The type the last object's __typename named: a list's objects nearly always name the same one.
  let lastTypename: string | undefined;
  let lastType: CompositeType = type;
  return (shaping, outputValue, inputValue, path, parentType) => {
    if (keepsExisting(shaping, outputValue, inputValue, hasSelectionSet)) return outputValue;
    if (inputValue === null) return null;
    if (!selectionSet) assert(false, () => `Invalid empty selection set for composite type ${type}`);
    if (typeof inputValue !== 'object') {
      assert(false, () => `Invalid non-object value ${inputValue} returned by subgraph for composite type ${type}`);
    }
    if (outputValue !== undefined && typeof outputValue !== 'object') {
      assert(false, () => `Invalid non-object value ${inputValue} returned by subgraph for composite type ${type}`);
    }
    const input = inputValue as Record<string, unknown>;
    const inputTypename = input[TYPENAME];
    if (inputTypename !== undefined && typeof inputTypename !== 'string') {
      assert(false, () => `Invalid non-string value ${inputTypename} for __typename at ${path}`);
    }
    let objectType = type;
    if (inputTypename) {
      if (inputTypename !== lastTypename) {
        const typenameType = shaping.schema.type(inputTypename as string);
        if (!typenameType || !isCompositeType(typenameType)) {
          shaping.errors.push(
            ERRORS.INVALID_GRAPHQL.err(
              `Invalid __typename found for object at ${lastElementDescription(path, type, parentType)}.`,
              {
                path: Array.from(path),
              },
            ),
          );
          shaping.invalid = false;
          shaping.hasErrors = true;
          return null;
        }
        lastTypename = inputTypename as string;
        lastType = typenameType;
      }
      objectType = lastType;
    }
    const output = outputValue === undefined ? emptyObject() : (outputValue as Record<string, unknown>);
    const result = applySelectionSet(shaping, input, selectionSet!, output, path, objectType, outputValue === undefined);
    const hasErrors = result === NULL_BUBBLE_UP;
    shaping.invalid = false;
    shaping.hasErrors = hasErrors;
    return hasErrors ? null : output;
  };
}

function leafWriter(schema: Schema, type: Type, selectionSet: SelectionSet | undefined): Writer {
  const hasSelectionSet = Boolean(selectionSet);
  const isValid = leafCheck(schema, type);
  return (shaping, outputValue, inputValue, path, parentType) => {
    if (keepsExisting(shaping, outputValue, inputValue, hasSelectionSet)) return outputValue;
    if (inputValue === null) return null;
    if (outputValue !== undefined) assert(false, () => `Excepted output to be undefined but got ${type} for type ${type}`);
    const valid = isValid(inputValue);
    if (!valid) {
      shaping.errors.push(
        ERRORS.INVALID_GRAPHQL.err(`Invalid value found for ${lastElementDescription(path, type, parentType)}.`, {
          path: Array.from(path),
        }),
      );
    }
    shaping.hasErrors = !valid;
    return valid ? inputValue : null;
  };
}

type LeafType = Parameters<typeof isValidLeafValue>[2];

/**
 * Apollo's `isValidLeafValue` for one type, its common answers decided without it: any value of a
 * custom scalar, a string for String, a boolean for Boolean, a finite number for Float and a 32-bit
 * integer for Int and ID are valid. Everything else (an enum's value, a larger integer, a value of
 * another kind) is asked of Apollo's.
 */
function leafCheck(schema: Schema, type: Type): (value: unknown) => boolean {
  const leaf = type as LeafType;
  const apollo = (value: unknown) => isValidLeafValue(schema, value, leaf);
  if (isCustomScalarType(type)) return () => true;
  if (type === schema.stringType()) return (value) => typeof value === 'string';
  if (type === schema.booleanType()) return (value) => typeof value === 'boolean' || apollo(value);
  if (type === schema.floatType()) return (value) => (typeof value === 'number' && Number.isFinite(value)) || apollo(value);
  if (type === schema.intType() || type === schema.idType()) {
    return (value) => (typeof value === 'number' && (value | 0) === value) || apollo(value);
  }
  return apollo;
}

function lastElementDescription(path: ReadonlyArray<string | number>, currentType: Type, parentType: CompositeType): string {
  const element = path[path.length - 1];
  assert(element !== undefined, 'Should not have been called on an empty path');
  return typeof element === 'string'
    ? `field ${parentType}.${element}`
    : `array element of type ${currentType} at index ${element}`;
}
