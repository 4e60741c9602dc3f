import type { GraphQLSchema } from 'graphql';
import { buildFederatedSchema } from '../../platform/graphql/federation.js';
import { keyedMutation } from '../shared/keyed-mutation.js';
import type { CatalogContext } from './context.js';
import { CourseResolver, resolveCourseReference } from './course/course.resolver.js';
import { CourseVersionResolver, resolveCourseVersionReference } from './course-version/course-version.resolver.js';
import { DeadLetterResolver } from './dead-letters/dead-letter.resolver.js';
import { resolveTaxonomyReference, TaxonomyResolver } from './taxonomy/taxonomy.resolver.js';

export const catalogResolvers = [CourseResolver, CourseVersionResolver, TaxonomyResolver, DeadLetterResolver] as const;

export function buildCatalogSchema(): Promise<GraphQLSchema> {
  return buildFederatedSchema(
    { resolvers: [...catalogResolvers] },
    {
      Course: { __resolveReference: (ref: { courseId: string }, ctx: CatalogContext) => resolveCourseReference(ref, ctx) },
      CourseVersion: {
        __resolveReference: (ref: { courseVersionId: string }, ctx: CatalogContext) => resolveCourseVersionReference(ref, ctx),
      },
      Taxonomy: { __resolveReference: (ref: { taxonomyId: string }, ctx: CatalogContext) => resolveTaxonomyReference(ref, ctx) },
    },
    keyedMutation,
  );
}
