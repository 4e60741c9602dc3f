import { parse, type FragmentDefinitionNode, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { answerDependencies } from '../../../gateway/response-cache/answer-dependencies.js';
import { modelSchema } from '../../support/cache-model.js';

/** The ids an answer names, read with the selections @skip/@include left (answer-dependencies.ts). */
function depsOf(query: string, variables: Record<string, unknown>, data: Record<string, unknown>) {
  const document = parse(query);
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')!;
  const fragments = document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === 'FragmentDefinition');
  return answerDependencies({ schema: modelSchema, fragments, operation, variables, data });
}

const VERSION = { courseVersionId: 'v1', course: { title: 't' } };

describe('answer dependencies', () => {
  it('names every entity by the ids its answer carries, aliased or not', () => {
    const found = depsOf(
      '{ courseVersion(courseVersionId: "v1") { id: courseVersionId courseId course { courseId title } } }',
      {},
      { courseVersion: { id: 'v1', courseId: 'c1', course: { courseId: 'c1', title: 't' } } },
    );
    expect(found).toEqual({
      complete: true,
      ids: [
        { field: 'courseVersionId', id: 'v1' },
        { field: 'courseId', id: 'c1' },
      ],
    });
  });

  it.each([
    [
      'a variable',
      'query Q($s: Boolean!) { courseVersion(courseVersionId: "v1") { courseVersionId courseId @skip(if: $s) course { courseId @skip(if: $s) title } } }',
      { s: true },
    ],
    [
      'a literal',
      '{ courseVersion(courseVersionId: "v1") { courseVersionId courseId @include(if: false) course { courseId @include(if: false) title } } }',
      {},
    ],
    [
      'a named fragment',
      'query Q($i: Boolean = false) { courseVersion(courseVersionId: "v1") { ...V } } fragment V on CourseVersion { courseVersionId courseId @include(if: $i) course { courseId @include(if: $i) title } }',
      {},
    ],
  ])('is incomplete when @skip/@include left an id out, by %s', (_, query, variables) => {
    expect(depsOf(query, variables, { courseVersion: VERSION }).complete).toBe(false);
  });

  it('never takes another field aliased as an id for one', () => {
    const found = depsOf('{ course(courseId: "c1") { courseId: slug } }', {}, { course: { courseId: 'slug-c1' } });
    expect(found.complete).toBe(false);
    expect(found.ids).toEqual([]);
  });

  it('is incomplete for variables the executor would refuse', () => {
    expect(depsOf('query Q($s: Boolean!) { course(courseId: "c1") @skip(if: $s) { courseId } }', {}, {}).complete).toBe(false);
  });
});
