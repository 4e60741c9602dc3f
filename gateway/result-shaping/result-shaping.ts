import { createRequire } from 'node:module';
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
 * per-value results kept in two flags instead of an object. What it answers — data, the order of
 * its keys, null-prototype objects, error messages and paths, the asserts it throws — is Apollo's;
 * test/unit/gateway/result-shaping.test.ts compares the two on every case.
 */

/** The federation-internals instance Apollo Gateway itself loaded (its classes and schema objects). */
const gatewayRequire = createRequire(createRequire(import.meta.url).resolve('@apollo/gateway'));
const fi = gatewayRequire('@apollo/federation-internals') as typeof import('@apollo/federation-internals');
const { ERRORS, isCompositeType, isListType, isNonNullType, isObjectType, isSubtype, isValidLeafValue, Variable } = fi;
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
 * test/unit/gateway/result-shaping.test.ts checks that it still does).
 */
export function useResultShaping(kind: ResultShaping): void {
  apolloShaping.computeResponse = kind === 'lean' ? computeResponse : apolloComputeResponse;
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

/** One selection of a selection set, with what every object it is applied to asks of it. */
type Step =
  | {
      kind: 'field';
      responseName: string;
      isTypename: boolean;
      isIntrospection: boolean;
      selection: FieldSelection;
      type: Type;
      selectionSet: SelectionSet | undefined;
    }
  | {
      kind: 'fragment';
      typeCondition: CompositeType | undefined;
      selectionSet: SelectionSet;
      /** Whether the condition applies, by `__typename` (or by parent type when there is none). */
      applies: Map<string | NamedType, boolean>;
    };

interface Shaping {
  schema: Schema;
  variables: Record<string, unknown>;
  errors: GraphQLError[];
  introspectionHandling: ShapingInput['introspectionHandling'];
  /** Per selection set: its steps, @skip/@include already applied (this request's variables). */
  steps: Map<SelectionSet, Step[]>;
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
    steps: new Map(),
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
  );
  return { data: result === NULL_BUBBLE_UP ? null : data, errors: shaping.errors };
}

function stepsOf(shaping: Shaping, selectionSet: SelectionSet): Step[] {
  let steps = shaping.steps.get(selectionSet);
  if (!steps) {
    steps = [];
    for (const selection of selectionSet.selections()) {
      if (!shouldSkip(selection, shaping.variables, shaping.schema)) steps.push(stepOf(selection));
    }
    shaping.steps.set(selectionSet, steps);
  }
  return steps;
}

function stepOf(selection: Selection): Step {
  if (selection.kind === 'FieldSelection') {
    const field = selection.element;
    return {
      kind: 'field',
      responseName: field.responseName(),
      isTypename: field.name === TYPENAME,
      isIntrospection: field.definition.isSchemaIntrospectionField(),
      selection,
      type: field.definition.type!,
      selectionSet: selection.selectionSet,
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
  path: Array<string | number>,
  parentType: CompositeType,
): typeof OK | typeof NULL_BUBBLE_UP {
  for (const step of stepsOf(shaping, selectionSet)) {
    if (step.kind === 'fragment') {
      if (fragmentApplies(shaping, step, input, parentType)) {
        const result = applySelectionSet(shaping, input, step.selectionSet, output, path, step.typeCondition ?? parentType);
        if (result === NULL_BUBBLE_UP) return NULL_BUBBLE_UP;
      }
      continue;
    }
    const { responseName } = step;
    const outputValue = output[responseName];
    if (step.isIntrospection) {
      if (outputValue === undefined) output[responseName] = shaping.introspectionHandling(step.selection);
      continue;
    }
    let inputValue = Object.hasOwn(input, responseName) ? (input[responseName] ?? null) : null;
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
    output[responseName] = updateOutputValue(shaping, outputValue, step.type, inputValue, step.selectionSet, path, parentType);
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

/**
 * The value at `path` merged into what is already there; sets `shaping.invalid` (a null where the
 * type forbids it: the parent becomes null) and `shaping.hasErrors` (an error was recorded below).
 */
function updateOutputValue(
  shaping: Shaping,
  outputValue: unknown,
  type: Type,
  inputValue: unknown,
  selectionSet: SelectionSet | undefined,
  path: Array<string | number>,
  parentType: CompositeType,
): unknown {
  assert(inputValue !== undefined, 'Should not pass undefined for `inputValue` to this method');
  shaping.invalid = false;
  shaping.hasErrors = false;
  if (outputValue === null || (outputValue !== undefined && !selectionSet)) return outputValue;
  if (isNonNullType(type)) {
    const updated = updateOutputValue(shaping, outputValue, type.ofType, inputValue, selectionSet, path, parentType);
    if (updated === null) {
      if (!shaping.hasErrors) {
        shaping.errors.push(
          ERRORS.INVALID_GRAPHQL.err(
            `Cannot return null for non-nullable ${lastElementDescription(path, type.ofType, parentType)}.`,
            {
              path: Array.from(path),
            },
          ),
        );
      }
      shaping.invalid = true;
      shaping.hasErrors = true;
      return null;
    }
    shaping.invalid = false;
    shaping.hasErrors = false;
    return updated;
  }
  if (inputValue === null) return null;
  if (isListType(type)) return updateList(shaping, outputValue, type, inputValue, selectionSet, path, parentType);
  if (isCompositeType(type)) return updateObject(shaping, outputValue, type, inputValue, selectionSet, path, parentType);
  assert(outputValue === undefined, () => `Excepted output to be undefined but got ${type} for type ${type}`);
  const valid = isValidLeafValue(shaping.schema, inputValue, type as Parameters<typeof isValidLeafValue>[2]);
  if (!valid) {
    shaping.errors.push(
      ERRORS.INVALID_GRAPHQL.err(`Invalid value found for ${lastElementDescription(path, type, parentType)}.`, {
        path: Array.from(path),
      }),
    );
  }
  shaping.hasErrors = !valid;
  return valid ? inputValue : null;
}

function updateList(
  shaping: Shaping,
  outputValue: unknown,
  type: Extract<Type, { kind: 'ListType' }>,
  inputValue: unknown,
  selectionSet: SelectionSet | undefined,
  path: Array<string | number>,
  parentType: CompositeType,
): unknown {
  assert(Array.isArray(inputValue), () => `Invalid non-list value ${inputValue} returned by subgraph for list type ${type}`);
  assert(
    outputValue === undefined || Array.isArray(outputValue),
    () => `Invalid non-list value ${outputValue} returned by subgraph for list type ${type}`,
  );
  const inputList = inputValue as unknown[];
  const outputList =
    outputValue === undefined ? new Array<unknown>(inputList.length).fill(undefined) : (outputValue as unknown[]);
  assert(
    inputList.length === outputList.length,
    () => `[${inputList}].length (${inputList.length}) !== [${outputList}].length (${outputList.length})`,
  );
  let shouldNullify = false;
  let hasErrors = false;
  const updated = new Array<unknown>(outputList.length);
  for (let index = 0; index < outputList.length; index++) {
    path.push(index);
    updated[index] = updateOutputValue(shaping, outputList[index], type.ofType, inputList[index], selectionSet, path, parentType);
    path.pop();
    shouldNullify ||= shaping.invalid;
    hasErrors ||= shaping.hasErrors;
  }
  shaping.invalid = false;
  shaping.hasErrors = hasErrors;
  return shouldNullify ? null : updated;
}

function updateObject(
  shaping: Shaping,
  outputValue: unknown,
  type: CompositeType,
  inputValue: unknown,
  selectionSet: SelectionSet | undefined,
  path: Array<string | number>,
  parentType: CompositeType,
): unknown {
  assert(selectionSet, () => `Invalid empty selection set for composite type ${type}`);
  assert(
    typeof inputValue === 'object',
    () => `Invalid non-object value ${inputValue} returned by subgraph for composite type ${type}`,
  );
  assert(
    outputValue === undefined || typeof outputValue === 'object',
    () => `Invalid non-object value ${inputValue} returned by subgraph for composite type ${type}`,
  );
  const input = inputValue as Record<string, unknown>;
  const inputTypename = input[TYPENAME];
  assert(
    inputTypename === undefined || typeof inputTypename === 'string',
    () => `Invalid non-string value ${inputTypename} for __typename at ${path}`,
  );
  let objectType = type;
  if (inputTypename) {
    const typenameType = shaping.schema.type(inputTypename as string);
    if (!typenameType || !isCompositeType(typenameType)) {
      shaping.errors.push(
        ERRORS.INVALID_GRAPHQL.err(`Invalid __typename found for object at ${lastElementDescription(path, type, parentType)}.`, {
          path: Array.from(path),
        }),
      );
      shaping.invalid = false;
      shaping.hasErrors = true;
      return null;
    }
    objectType = typenameType;
  }
  const output = outputValue === undefined ? emptyObject() : (outputValue as Record<string, unknown>);
  const result = applySelectionSet(shaping, input, selectionSet, output, path, objectType);
  const hasErrors = result === NULL_BUBBLE_UP;
  shaping.invalid = false;
  shaping.hasErrors = hasErrors;
  return hasErrors ? null : output;
}

function lastElementDescription(path: ReadonlyArray<string | number>, currentType: Type, parentType: CompositeType): string {
  const element = path[path.length - 1];
  assert(element !== undefined, 'Should not have been called on an empty path');
  return typeof element === 'string'
    ? `field ${parentType}.${element}`
    : `array element of type ${currentType} at index ${element}`;
}
