/**
 * The hottest loop of result shaping, compiled per list of fields: copying one input object's
 * fields into a new answer object. Looked up by a name held in a variable, every field read and
 * written is a megamorphic keyed access (the wide page: two thirds of shaping's time went to those
 * three lines). A function with the names written in it makes each access a site of its own that
 * V8 caches for the one shape it sees. The same code for every request with the same fields, so it
 * is compiled once per list of names and kept (least recently used dropped past a bound).
 *
 * Semantics are result-shaping.ts's `applySelectionSet` on a new object whose steps are plain
 * fields, each response name once: for each field in order, the input's own value (or null),
 * written through the field's writer, stopping with NULL_BUBBLE_UP (1) when a value made the
 * object invalid.
 */

/** What the compiled code reads of shaping's state: whether the last value made its parent invalid. */
interface ShapingState {
  invalid: boolean;
}

export type FieldWriter<S extends ShapingState, P> = (
  shaping: S,
  outputValue: undefined,
  inputValue: unknown,
  path: Array<string | number>,
  parentType: P,
) => unknown;

export interface FillField {
  responseName: string;
  /** No plain object inherits this name (see result-shaping.ts): on one, a value found is its own. */
  neverInherited: boolean;
}

export type Fill<S extends ShapingState, P> = (
  shaping: S,
  input: Record<string, unknown>,
  output: Record<string, unknown>,
  path: Array<string | number>,
  parentType: P,
  plainInput: boolean,
  writers: ReadonlyArray<FieldWriter<S, P>>,
) => 0 | 1;

/** GraphQL's Name: the only response names a parsed operation can hold. */
const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;

/**
 * Distinct field lists kept compiled. A gateway serves a few hundred documents of a few dozen
 * selection sets each; the bound keeps a caller sending ever-new documents from growing the process.
 */
const MAX_FILLS = 2_000;
const fills = new Map<string, Fill<ShapingState, unknown>>();

export function compiledFill<S extends ShapingState, P>(fields: readonly FillField[]): Fill<S, P> {
  const key = fields.map((field) => `${field.responseName}${field.neverInherited ? '' : '!'}`).join(',');
  let fill = fills.get(key);
  if (fill) {
    fills.delete(key);
  } else {
    fill = compile(fields);
    if (fills.size >= MAX_FILLS) fills.delete(fills.keys().next().value as string);
  }
  fills.set(key, fill);
  return fill as unknown as Fill<S, P>;
}

function compile(fields: readonly FillField[]): Fill<ShapingState, unknown> {
  const statements = fields.map((field, index) => {
    // A name is checked before it is written into code, though the parser allows no other.
    if (!GRAPHQL_NAME.test(field.responseName)) throw new Error(`Not a GraphQL name: ${JSON.stringify(field.responseName)}`);
    const name = JSON.stringify(field.responseName);
    const own = field.neverInherited ? `plainInput || hasOwn(input, ${name})` : `hasOwn(input, ${name})`;
    return [
      `value = input[${name}];`,
      `if (value === undefined || value === null || !(${own})) value = null;`,
      `path.push(${name});`,
      `output[${name}] = writers[${index}](shaping, undefined, value, path, parentType);`,
      `path.pop();`,
      `if (shaping.invalid) return 1;`,
    ].join('\n');
  });
  const source = [
    'return function fill(shaping, input, output, path, parentType, plainInput, writers) {',
    'let value;',
    ...statements,
    'return 0;',
    '};',
  ].join('\n');
  // The code is built above from checked names only; the writers and hasOwn come in as arguments.
  return new Function('hasOwn', source)(Object.hasOwn) as Fill<ShapingState, unknown>;
}
