import { Kind, parse, type ConstDirectiveNode, type DocumentNode } from 'graphql';

/** A key of Apollo Client's typePolicies: field names, a nested selection as an array after its field. */
export type KeyFields = Array<string | KeyFields>;

/** What Apollo Client's InMemoryCache needs to normalise this graph (issue #26). */
export interface ApolloCacheConfig {
  /** Entity type to the fields that identify it: our entities have `courseId`, … not `id`. */
  typePolicies: Record<string, { keyFields: KeyFields }>;
  /** Interface or union to the object types that can stand for it. */
  possibleTypes: Record<string, string[]>;
}

const ROOT_TYPES = new Set(['Query', 'Mutation', 'Subscription']);

/**
 * Reads the supergraph's `@join__type(key: …)` directives: the same keys the gateway resolves
 * entities by identify them in a client's cache. Other types are values Apollo Client keeps inside
 * their parent: guessing a key from an `…Id` field would merge objects that only share a reference
 * (two versions of one template's reference share its `templateId`). Apollo Client keys objects by `id`/`_id` by
 * default, so without this a client's cache holds one entry per list and a mutation updates no
 * cached list. `npm run compose` writes the result next to the supergraph.
 */
export function apolloCacheConfig(supergraphSdl: string): ApolloCacheConfig {
  const document = parse(supergraphSdl);
  const typePolicies: ApolloCacheConfig['typePolicies'] = {};
  const possibleTypes: Record<string, Set<string>> = {};
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OBJECT_TYPE_DEFINITION && !ROOT_TYPES.has(definition.name.value)) {
      const key = firstKey(definition.directives ?? []);
      if (key) typePolicies[definition.name.value] = { keyFields: keyFieldsOf(key) };
      for (const implemented of definition.interfaces ?? []) {
        (possibleTypes[implemented.name.value] ??= new Set()).add(definition.name.value);
      }
    }
    if (definition.kind === Kind.UNION_TYPE_DEFINITION) {
      const members = (definition.types ?? []).map((type) => type.name.value);
      possibleTypes[definition.name.value] = new Set(members);
    }
  }
  return {
    typePolicies: sortedRecord(typePolicies),
    possibleTypes: sortedRecord(Object.fromEntries(Object.entries(possibleTypes).map(([name, set]) => [name, [...set].sort()]))),
  };
}

/** The file `npm run compose` writes: stable JSON, one trailing newline. */
export function apolloCacheFile(supergraphSdl: string): string {
  return `${JSON.stringify(apolloCacheConfig(supergraphSdl), null, 2)}\n`;
}

function firstKey(directives: readonly ConstDirectiveNode[]): string | undefined {
  for (const directive of directives) {
    if (directive.name.value !== 'join__type') continue;
    const key = directive.arguments?.find((argument) => argument.name.value === 'key');
    if (key?.value.kind === Kind.STRING) return key.value.value;
  }
  return undefined;
}

/** "courseId" → ['courseId']; "course { courseId } locale" → ['course', ['courseId'], 'locale']. */
export function keyFieldsOf(key: string): KeyFields {
  const document: DocumentNode = parse(`{ ${key} }`);
  const operation = document.definitions[0];
  if (operation?.kind !== Kind.OPERATION_DEFINITION) return [];
  const walk = (selections: typeof operation.selectionSet.selections): KeyFields =>
    selections.flatMap((selection) => {
      if (selection.kind !== Kind.FIELD) return [];
      const name = selection.name.value;
      return selection.selectionSet ? [name, walk(selection.selectionSet.selections)] : [name];
    });
  return walk(operation.selectionSet.selections);
}

function sortedRecord<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}
