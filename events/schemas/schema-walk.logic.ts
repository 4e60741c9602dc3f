/**
 * JSON Schema documents as plain data. The transforms and the compatibility check walk them
 * keyword by keyword, so the set of keywords that hold subschemas lives in one place.
 */
export type JsonSchema = { [keyword: string]: unknown };

const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'dependentSchemas'] as const;
const SCHEMA_LISTS = ['prefixItems', 'allOf', 'anyOf', 'oneOf'] as const;
const SCHEMA_VALUES = [
  'items',
  'additionalProperties',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
  'unevaluatedProperties',
  'unevaluatedItems',
] as const;

export function isSchemaObject(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A copy of `schema` with `fn` applied bottom-up to every subschema object, the root last. */
export function mapSchema(schema: JsonSchema, fn: (node: JsonSchema) => JsonSchema): JsonSchema {
  const out: JsonSchema = { ...schema };
  for (const key of SCHEMA_MAPS) {
    const map = out[key];
    if (isSchemaObject(map)) {
      out[key] = Object.fromEntries(
        Object.entries(map).map(([name, sub]) => [name, isSchemaObject(sub) ? mapSchema(sub, fn) : sub]),
      );
    }
  }
  for (const key of SCHEMA_LISTS) {
    const list = out[key];
    if (Array.isArray(list)) out[key] = list.map((sub) => (isSchemaObject(sub) ? mapSchema(sub, fn) : sub));
  }
  for (const key of SCHEMA_VALUES) {
    const sub = out[key];
    if (isSchemaObject(sub)) out[key] = mapSchema(sub, fn);
  }
  return fn(out);
}

export { SCHEMA_MAPS, SCHEMA_LISTS, SCHEMA_VALUES };
