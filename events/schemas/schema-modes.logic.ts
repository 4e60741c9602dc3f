import { isSchemaObject, mapSchema, type JsonSchema } from './schema-walk.logic.js';

/**
 * The committed schemas are open (no additionalProperties: false) because adding an optional
 * field is a minor change: a consumer holding the older copy must still accept the newer event.
 * Each side then validates with its own reading of the same document:
 *
 * - producer: closed objects, so a misspelt or undeclared field in our own payload is a bug we
 *   catch before it is written to the outbox (the schema is the producer's own contract);
 * - consumer: strict on required members and types, but enums are widened to their base type,
 *   because the Versioning section makes enum widening a minor change that consumers must
 *   tolerate. The handler decides what an unknown value means (e.g. ignore an unknown GDPR
 *   request type), which is a business rule, not a validation failure.
 */
export function producerSchema(schema: JsonSchema): JsonSchema {
  return mapSchema(schema, (node) =>
    isSchemaObject(node.properties) && node.additionalProperties === undefined && node.unevaluatedProperties === undefined
      ? { ...node, additionalProperties: false }
      : node,
  );
}

export function consumerSchema(schema: JsonSchema): JsonSchema {
  return mapSchema(schema, (node) => {
    if (!('enum' in node) && !('const' in node)) return node;
    const values = 'enum' in node && Array.isArray(node.enum) ? node.enum : [node.const];
    const { enum: _enum, const: _const, ...rest } = node;
    if (rest.type !== undefined) return rest;
    const types = [...new Set(values.map(jsonType))];
    return { ...rest, type: types.length === 1 ? types[0] : types };
  });
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}
