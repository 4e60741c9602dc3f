import {
  getDirectiveValues,
  getNamedType,
  getVariableValues,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isAbstractType,
  isObjectType,
  Kind,
  typeFromAST,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { MAX_ENTITY_TAGS, type IdField } from './cache-policy.logic.js';

/**
 * Which catalog entities an answer depends on, read from the answer itself and the selections
 * that produced it once @skip/@include were applied with this request's variables: never from the
 * document's text, where `courseId @skip(if: $x)` looks selected though the answer has no id
 * (issue #33). No I/O: graphql-js's field collection rules over the answer, no execution.
 */

/** The ids an object of these types must carry in the answer for its tags to name it. */
const REQUIRED_IDS: Readonly<Record<string, readonly IdField[]>> = {
  Course: ['courseId'],
  // A version's answer can change with its course (a newer version published): it is tagged by both.
  CourseVersion: ['courseVersionId', 'courseId'],
  Taxonomy: ['taxonomyId'],
};

/** Answers are already bounded by the gateway's limits; this bounds the walk whatever they are. */
const MAX_NODES = 100_000;

export interface AnswerDependencies {
  ids: Array<{ field: IdField; id: string }>;
  /**
   * False when some entity in the answer could not be named by an id it carries (the id was not
   * selected, skipped, null), the walk met something it cannot type, or there were too many ids:
   * then the entry must depend on its tenant's list tag.
   */
  complete: boolean;
}

interface Walk {
  schema: GraphQLSchema;
  fragments: Map<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
  seen: Set<string>;
  ids: Array<{ field: IdField; id: string }>;
  complete: boolean;
  nodes: number;
}

export function answerDependencies(input: {
  schema: GraphQLSchema;
  fragments: ReadonlyArray<FragmentDefinitionNode>;
  operation: OperationDefinitionNode;
  variables: Record<string, unknown> | undefined;
  data: Record<string, unknown>;
}): AnswerDependencies {
  const { schema, operation } = input;
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], input.variables ?? {});
  // A mutation's answer names what the mutation changed (mutationTags).
  const root =
    operation.operation === 'query'
      ? schema.getQueryType()
      : operation.operation === 'mutation'
        ? schema.getMutationType()
        : undefined;
  // Variables the executor would have refused, or no root type: nothing can be named safely.
  if (coerced.errors || !root) return { ids: [], complete: false };
  const walk: Walk = {
    schema,
    fragments: new Map(input.fragments.map((f) => [f.name.value, f])),
    variables: coerced.coerced,
    seen: new Set(),
    ids: [],
    complete: true,
    nodes: 0,
  };
  walkObject(walk, root, [operation.selectionSet], input.data);
  return { ids: walk.ids, complete: walk.complete && walk.ids.length <= MAX_ENTITY_TAGS };
}

function walkValue(walk: Walk, type: GraphQLObjectType, selectionSets: SelectionSetNode[], value: unknown): void {
  if (!walk.complete || value === null || value === undefined) return;
  if (++walk.nodes > MAX_NODES) {
    walk.complete = false;
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) walkValue(walk, type, selectionSets, item);
  } else if (typeof value === 'object') {
    walkObject(walk, type, selectionSets, value as Record<string, unknown>);
  } else {
    walk.complete = false;
  }
}

/** One object of the answer: its entity ids (if it is an entity), then every object field in it. */
function walkObject(
  walk: Walk,
  type: GraphQLObjectType,
  selectionSets: SelectionSetNode[],
  value: Record<string, unknown>,
): void {
  const fields = collectFields(walk, type, selectionSets);
  for (const idField of REQUIRED_IDS[type.name] ?? []) {
    const key = [...fields].find(([, nodes]) => nodes[0].name.value === idField)?.[0];
    const id = key === undefined ? undefined : value[key];
    if (typeof id !== 'string') {
      walk.complete = false;
      return;
    }
    addId(walk, idField, id);
  }
  for (const [key, nodes] of fields) {
    const name = nodes[0].name.value;
    if (name.startsWith('__')) continue;
    const fieldType = type.getFields()[name]?.type;
    if (!fieldType) {
      walk.complete = false;
      return;
    }
    const named = getNamedType(fieldType);
    if (isAbstractType(named)) {
      // No catalog type is abstract today; one that is would need __typename to be read safely.
      walk.complete = false;
      return;
    }
    if (!isObjectType(named)) continue;
    const sub = nodes.flatMap((node) => (node.selectionSet ? [node.selectionSet] : []));
    walkValue(walk, named, sub, value[key]);
  }
}

function addId(walk: Walk, field: IdField, id: string): void {
  const mark = `${field}:${id}`;
  if (walk.seen.has(mark)) return;
  walk.seen.add(mark);
  walk.ids.push({ field, id });
}

/**
 * The fields of `type` the selections ask for, by response key, after @skip/@include: graphql-js's
 * CollectFields (spec 6.3.2), with fragments applied only where their type condition matches.
 */
function collectFields(walk: Walk, type: GraphQLObjectType, selectionSets: SelectionSetNode[]): Map<string, FieldNode[]> {
  const fields = new Map<string, FieldNode[]>();
  const visited = new Set<string>();
  const collect = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (!included(walk, selection)) continue;
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value;
        fields.set(key, [...(fields.get(key) ?? []), selection]);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (matches(walk, type, selection.typeCondition?.name.value)) collect(selection.selectionSet);
      } else {
        const name = selection.name.value;
        const fragment = walk.fragments.get(name);
        if (visited.has(name) || !fragment) continue;
        visited.add(name);
        if (matches(walk, type, fragment.typeCondition.name.value)) collect(fragment.selectionSet);
      }
    }
  };
  for (const set of selectionSets) collect(set);
  return fields;
}

function included(walk: Walk, node: Parameters<typeof getDirectiveValues>[1]): boolean {
  const skip = getDirectiveValues(GraphQLSkipDirective, node, walk.variables);
  if (skip?.if === true) return false;
  const include = getDirectiveValues(GraphQLIncludeDirective, node, walk.variables);
  return include?.if !== false;
}

function matches(walk: Walk, type: GraphQLObjectType, condition: string | undefined): boolean {
  if (condition === undefined || condition === type.name) return true;
  const conditionType = typeFromAST(walk.schema, { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: condition } });
  return conditionType !== undefined && isAbstractType(conditionType) && walk.schema.isSubType(conditionType, type);
}
