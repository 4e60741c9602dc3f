import type { GraphQLAnswer } from './subgraph-answer.logic.js';

/**
 * Apollo Gateway sends one `_entities` representation per entity it met on the path, repeats
 * included: `courses(first: 100) { … versions { course { aiProvenance } } }` asks the AI subgraph
 * for the same 100 courses once per version. The gateway sends each distinct representation once
 * and hands the planner the answer at every position it asked for, so what it sends is bounded by
 * the entities of the page (at most MAX_PAGE_SIZE = 100 courses), never by their repeats — which
 * keeps the gateway's own fetches far below the subgraphs' cap on representations per request
 * (QUERY_MAX_REPRESENTATIONS) and their cost limit.
 */
export interface DistinctRepresentations {
  /** The variables to send: `representations` without repeats. */
  variables: Record<string, unknown> | undefined;
  /** The subgraph's answer for the distinct ones, laid out as the planner asked. */
  expand(answer: GraphQLAnswer): GraphQLAnswer;
}

export function distinctRepresentations(variables: Record<string, unknown> | undefined): DistinctRepresentations {
  const representations = variables?.representations;
  if (!Array.isArray(representations)) return { variables, expand: (answer) => answer };
  const firstAt = new Map<string, number>();
  const distinct: unknown[] = [];
  // positionOf[i]: where the representation the planner put at i is in `distinct`.
  // The positions of the planner's list where a representation appears for the first time.
  const firstUses = new Set<number>();
  const positionOf = representations.map((representation, index) => {
    const key = JSON.stringify(representation);
    let position = firstAt.get(key);
    if (position === undefined) {
      position = distinct.push(representation) - 1;
      firstAt.set(key, position);
      firstUses.add(index);
    }
    return position;
  });
  if (distinct.length === representations.length) return { variables, expand: (answer) => answer };
  return {
    variables: { ...variables, representations: distinct },
    expand: (answer) => expandAnswer(answer, positionOf, firstUses),
  };
}

function expandAnswer(answer: GraphQLAnswer, positionOf: readonly number[], firstUses: ReadonlySet<number>): GraphQLAnswer {
  const entities = answer.data?._entities;
  const data = Array.isArray(entities)
    ? {
        ...answer.data,
        // Each position gets its own copy: the planner merges later fetches into these objects.
        _entities: positionOf.map((position, index) =>
          firstUses.has(index) ? entities[position] : structuredClone(entities[position]),
        ),
      }
    : answer.data;
  const errors = answer.errors?.flatMap((error) => {
    const [head, position, ...rest] = error.path ?? [];
    if (head !== '_entities' || typeof position !== 'number') return [error];
    return positionOf.flatMap((at, index) => (at === position ? [{ ...error, path: ['_entities', index, ...rest] }] : []));
  });
  return { ...answer, data, ...(errors ? { errors } : {}) };
}
