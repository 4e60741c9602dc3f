import 'reflect-metadata';
import { isObjectType, type GraphQLSchema } from 'graphql';
import { getMetadataStorage } from 'type-graphql';
import { describe, expect, it } from 'vitest';
import { buildAiSchema } from '../../../subgraphs/ai/schema.js';
import { buildCatalogSchema } from '../../../subgraphs/catalog/schema.js';

/**
 * A plain field of an object type (a property of the class) is read by the executor's default
 * resolver: `@ObjectType({ simpleResolvers: true })`. Without it type-graphql wraps every such field
 * in a resolver of its own, which graphql-jit then calls per value instead of reading the property
 * (without those the catalog's CPU per REST page fell 8-16 %: bench/README.md, 2026-11-29, fourth).
 * Only the fields a resolver class declares with `@FieldResolver` keep a resolver, and every one of
 * those still has it.
 */
const ROOTS = new Set(['Query', 'Mutation', 'Subscription']);

function fieldsWithResolvers(schema: GraphQLSchema): string[] {
  const resolved: string[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || ROOTS.has(type.name) || type.name.startsWith('_')) continue;
    for (const field of Object.values(type.getFields())) if (field.resolve) resolved.push(`${type.name}.${field.name}`);
  }
  return resolved.sort();
}

/** Every `@FieldResolver` of the given resolver classes' object types, as `Type.field`. */
function declaredFieldResolvers(schema: GraphQLSchema): string[] {
  const storage = getMetadataStorage();
  const typeName = (target: unknown) => storage.objectTypes.find((objectType) => objectType.target === target)?.name;
  return storage.fieldResolvers
    .map((resolver) => `${typeName(resolver.getObjectType?.())}.${resolver.schemaName}`)
    .filter((name) => {
      const [type, field] = name.split('.');
      const found = schema.getType(type);
      return isObjectType(found) && field in found.getFields();
    })
    .sort();
}

describe('plain fields read by the default resolver', () => {
  for (const [name, build] of [
    ['catalog', buildCatalogSchema],
    ['ai', buildAiSchema],
  ] as const) {
    it(`${name}: only declared field resolvers resolve a field of an object type`, async () => {
      const schema = await build();
      const declared = declaredFieldResolvers(schema);
      expect(declared.length).toBeGreaterThan(0);
      expect(fieldsWithResolvers(schema), 'a plain field has a resolver: give its @ObjectType `simpleResolvers: true`').toEqual(
        declared,
      );
    });
  }
});
