import { beforeEach, describe, expect, it, vi } from 'vitest';

// Counts the parses graphqlKeyedWrite makes, with graphql's own parse doing the work.
const parses = vi.hoisted(() => ({ count: 0 }));
vi.mock('graphql', async (importOriginal) => {
  const graphql = await importOriginal<typeof import('graphql')>();
  return {
    ...graphql,
    parse: (...args: Parameters<typeof graphql.parse>) => {
      parses.count++;
      return graphql.parse(...args);
    },
  };
});

const { graphqlKeyedWrite } = await import('../../../platform/idempotency/graphql-mutations.js');

describe('the Idempotency-Key rule parses only what may be a mutation', () => {
  beforeEach(() => {
    parses.count = 0;
  });

  it('takes a read without the mutation keyword as a read, without parsing it', () => {
    const reads = [
      '{ courses(first: 20) { edges { node { courseId } } } }',
      'query Page($first: Int) { courses(first: $first) { edges { node { courseId } } } }',
      'query { a } fragment F on Course { courseId }',
    ];
    for (const query of reads) expect(graphqlKeyedWrite({ query }, 4_000)).toBeUndefined();
    expect(parses.count).toBe(0);
  });

  it('parses a text that holds the word, and still tells a read from a mutation', () => {
    expect(graphqlKeyedWrite({ query: 'query Q { mutationLog { id } }' }, 4_000)).toBeUndefined();
    expect(graphqlKeyedWrite({ query: 'mutation Archive { archiveCourse(courseId: "c") { courseId } }' }, 4_000)?.route).toBe(
      'graphql:Archive',
    );
    expect(graphqlKeyedWrite({ query: '# a mutation in a comment\n{ a }' }, 4_000)).toBeUndefined();
    expect(parses.count).toBe(3);
  });
});
