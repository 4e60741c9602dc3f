import { Directive, Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { GraphQLJSONObject } from '../../../platform/graphql/scalars.js';

@ObjectType({ simpleResolvers: true })
export class TaxonomyNode {
  @Field(() => String) path: string;
  @Field(() => GraphQLJSONObject) label: Record<string, string>;
}

@Directive('@key(fields: "taxonomyId")')
@ObjectType({ simpleResolvers: true, description: 'A versioned taxonomy tree of a tenant, one per namespace.' })
export class Taxonomy {
  @Field(() => ID) taxonomyId: string;
  @Field(() => String) namespace: string;
  @Field(() => Int) version: number;
  @Field(() => [TaxonomyNode]) nodes: TaxonomyNode[];
  @Field(() => Date) updatedAt: Date;
  @Field(() => String, {
    description:
      'Entity tag of this version: send it as If-Match to publishTaxonomy for the next one (missing: 428 request.precondition_required, stale: 412 request.precondition_failed).',
  })
  etag: string;
}

@InputType()
export class TaxonomyNodeInput {
  @Field(() => String, { description: 'Segments separated by /, e.g. clinical/cardiology.' }) path: string;
  @Field(() => GraphQLJSONObject, { description: 'Locale code to label.' }) label: Record<string, string>;
}

@InputType()
export class TaxonomyMoveInput {
  @Field(() => String) from: string;
  @Field(() => String) to: string;
}

@InputType({ description: 'Applied in the order removed, moved, renamed, added; removals and moves take the subtree along.' })
export class TaxonomyDiffInput {
  @Field(() => [TaxonomyNodeInput], { nullable: true }) added?: TaxonomyNodeInput[];
  @Field(() => [String], { nullable: true }) removed?: string[];
  @Field(() => [TaxonomyMoveInput], { nullable: true }) moved?: TaxonomyMoveInput[];
  @Field(() => [TaxonomyNodeInput], { nullable: true }) renamed?: TaxonomyNodeInput[];
}

@InputType()
export class PublishTaxonomyInput {
  @Field(() => String) namespace: string;
  @Field(() => Int, {
    nullable: true,
    description: 'The version the diff was made against (0 before the first); a different current version is a request.conflict.',
  })
  expectedVersion?: number | null;
  @Field(() => TaxonomyDiffInput) diff: TaxonomyDiffInput;
}
