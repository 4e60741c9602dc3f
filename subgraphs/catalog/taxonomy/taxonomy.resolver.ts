import type { Taxonomy as TaxonomyRow } from '../../../prisma/generated/client.js';
import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import { runAdminMutation } from '../admin-mutation.js';
import type { CatalogContext } from '../context.js';
import { CATALOG_READ } from '../scopes.js';
import { publishTaxonomy } from '../use-cases/publish-taxonomy.js';
import { requireTaxonomyId, taxonomyEtag } from './taxonomy.logic.js';
import { PublishTaxonomyInput, Taxonomy, type TaxonomyNode } from './taxonomy.type.js';

export function toTaxonomy(row: TaxonomyRow): Taxonomy {
  return {
    taxonomyId: row.id,
    namespace: row.namespace,
    version: row.version,
    nodes: row.nodes as unknown as TaxonomyNode[],
    updatedAt: row.updatedAt,
    etag: taxonomyEtag(row.version),
  };
}

@Resolver(() => Taxonomy)
export class TaxonomyResolver {
  @Query(() => Taxonomy, {
    nullable: true,
    description: "A taxonomy of the caller's tenant; null when absent (scope catalog.read or catalog.admin).",
  })
  async taxonomy(@Arg('taxonomyId', () => ID) taxonomyId: string, @Ctx() ctx: CatalogContext): Promise<Taxonomy | null> {
    requireAnyScope(ctx.principal, CATALOG_READ);
    const row = await ctx.loaders.taxonomy.load(requireTaxonomyId(taxonomyId));
    return row ? toTaxonomy(row) : null;
  }

  @Mutation(() => Taxonomy, {
    description:
      "Publishes the next version of a namespace's taxonomy from a diff and emits catalog.taxonomy.updated. Scope catalog.admin. Once the namespace has a version, needs the If-Match header with its etag (missing: 428 request.precondition_required, stale: 412 request.precondition_failed); the first version is created without one.",
  })
  async publishTaxonomy(
    @Arg('input', () => PublishTaxonomyInput) input: PublishTaxonomyInput,
    @Ctx() ctx: CatalogContext,
  ): Promise<Taxonomy> {
    const row = await runAdminMutation(ctx, (admin) =>
      publishTaxonomy(admin, {
        namespace: input.namespace,
        expectedVersion: input.expectedVersion,
        ifMatch: ctx.ifMatch,
        diff: {
          added: input.diff.added ?? [],
          removed: input.diff.removed ?? [],
          moved: input.diff.moved ?? [],
          renamed: input.diff.renamed ?? [],
        },
      }),
    );
    return toTaxonomy(row);
  }
}

export async function resolveTaxonomyReference(ref: { taxonomyId: string }, ctx: CatalogContext): Promise<Taxonomy | null> {
  requireAnyScope(ctx.principal, CATALOG_READ);
  const row = await ctx.loaders.taxonomy.load(requireTaxonomyId(ref.taxonomyId));
  return row ? toTaxonomy(row) : null;
}
