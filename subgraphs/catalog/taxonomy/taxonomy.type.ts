import { Directive, Field, ID, Int, ObjectType } from 'type-graphql';
import { GraphQLJSONObject } from '../../../platform/graphql/scalars.js';

@ObjectType()
export class TaxonomyNode {
  @Field(() => String) path: string;
  @Field(() => GraphQLJSONObject) label: Record<string, string>;
}

@Directive('@key(fields: "taxonomyId")')
@ObjectType({ description: 'A versioned taxonomy tree of a tenant, one per namespace.' })
export class Taxonomy {
  @Field(() => ID) taxonomyId: string;
  @Field(() => String) namespace: string;
  @Field(() => Int) version: number;
  @Field(() => [TaxonomyNode]) nodes: TaxonomyNode[];
  @Field(() => Date) updatedAt: Date;
}
