import type { Taxonomy as TaxonomyRow } from '../../../prisma/generated/client.js';
import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import { badInput } from '../../../platform/errors.js';
import { isId } from '../../../platform/ids.js';
import type { CatalogContext } from '../context.js';
import { Taxonomy, type TaxonomyNode } from './taxonomy.type.js';

export function toTaxonomy(row: TaxonomyRow): Taxonomy {
  return {
    taxonomyId: row.id,
    namespace: row.namespace,
    version: row.version,
    nodes: row.nodes as unknown as TaxonomyNode[],
    updatedAt: row.updatedAt,
  };
}

function requireTaxonomyId(value: string): string {
  if (!isId('taxonomy', value)) throw badInput('taxonomyId is not a taxonomy id', { argument: 'taxonomyId' });
  return value;
}

@Resolver(() => Taxonomy)
export class TaxonomyResolver {
  @Query(() => Taxonomy, { nullable: true })
  async taxonomy(@Arg('taxonomyId', () => ID) taxonomyId: string, @Ctx() ctx: CatalogContext): Promise<Taxonomy | null> {
    const row = await ctx.loaders.taxonomy.load(requireTaxonomyId(taxonomyId));
    return row ? toTaxonomy(row) : null;
  }
}

export async function resolveTaxonomyReference(ref: { taxonomyId: string }, ctx: CatalogContext): Promise<Taxonomy | null> {
  const row = await ctx.loaders.taxonomy.load(requireTaxonomyId(ref.taxonomyId));
  return row ? toTaxonomy(row) : null;
}
