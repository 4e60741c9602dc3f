import { Directive, Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { GraphQLJSONObject } from '../../../platform/graphql/scalars.js';

@ObjectType({ simpleResolvers: true, description: 'An author of a course as listed in its metadata.' })
export class CourseAuthor {
  @Field(() => String) userId: string;
  @Field(() => String) role: string;
  @Field(() => String) displayName: string;
}

@ObjectType({ simpleResolvers: true })
export class CourseTaxonomyRef {
  @Field(() => String) taxonomyId: string;
  @Field(() => String) nodePath: string;
}

@ObjectType({ simpleResolvers: true })
export class CourseCover {
  @Field(() => String) assetId: string;
}

@Directive('@key(fields: "courseId")')
@ObjectType({
  simpleResolvers: true,
  description: 'A course of a tenant. Locale maps are exposed raw (JSON) and resolved for Accept-Language.',
})
export class Course {
  @Field(() => ID) courseId: string;
  @Field(() => String) tenantId: string;
  @Field(() => String) slug: string;
  @Field(() => GraphQLJSONObject, { description: 'Locale code to title.' }) title: Record<string, string>;
  @Field(() => GraphQLJSONObject, { description: 'Locale code to description.' }) description: Record<string, string>;
  @Field(() => String) defaultLocale: string;
  @Field(() => String, { description: 'Values seen: org, marketplace. Consumers must tolerate new values.' }) visibility: string;
  @Field(() => [CourseAuthor]) authors: CourseAuthor[];
  @Field(() => [CourseTaxonomyRef]) taxonomy: CourseTaxonomyRef[];
  @Field(() => [String]) tags: string[];
  @Field(() => CourseCover, { nullable: true }) cover?: CourseCover | null;
  @Field(() => String) etag: string;
  @Field(() => String, { nullable: true }) sourceDraftId?: string | null;
  @Field(() => String, { description: 'registered or archived.' }) state: string;
  @Field(() => String, { nullable: true }) latestVersionLabel?: string | null;
  @Field(() => Date) createdAt: Date;
  @Field(() => Date) updatedAt: Date;
}

@ObjectType({ simpleResolvers: true })
export class LocalizedText {
  @Field(() => String) locale: string;
  @Field(() => String) text: string;
}

@ObjectType({ simpleResolvers: true })
export class CourseEdge {
  @Field(() => String) cursor: string;
  @Field(() => Course) node: Course;
}

@ObjectType({ simpleResolvers: true })
export class PageInfo {
  @Field(() => Boolean) hasNextPage: boolean;
  @Field(() => String, { nullable: true }) endCursor: string | null;
}

@ObjectType({ simpleResolvers: true })
export class CourseConnection {
  @Field(() => [CourseEdge]) edges: CourseEdge[];
  @Field(() => PageInfo) pageInfo: PageInfo;
  @Field(() => Int, { description: 'Number of edges in this page.' }) count: number;
}

@InputType()
export class CoverInput {
  @Field(() => String, { description: 'A media asset id (med_...).' }) assetId: string;
}

@InputType()
export class AuthorInput {
  @Field(() => String, { description: 'A user id (usr_...).' }) userId: string;
  @Field(() => String, { description: 'Value seen: author.' }) role: string;
  @Field(() => String) displayName: string;
}

@InputType()
export class TaxonomyRefInput {
  @Field(() => String, { description: 'A taxonomy of the tenant (tax_...).' }) taxonomyId: string;
  @Field(() => String, { description: 'A node path of that taxonomy, e.g. clinical/cardiology.' }) nodePath: string;
}

@InputType({ description: 'The fields to replace; absent fields stay as they are. At least one is required.' })
export class UpdateCourseMetadataInput {
  @Field(() => GraphQLJSONObject, { nullable: true, description: 'Locale code to title; must cover defaultLocale.' })
  title?: Record<string, string>;
  @Field(() => GraphQLJSONObject, { nullable: true, description: 'Locale code to description.' }) description?: Record<
    string,
    string
  >;
  @Field(() => String, { nullable: true, description: 'BCP-47 locale code.' }) defaultLocale?: string;
  @Field(() => [String], { nullable: true }) tags?: string[];
  @Field(() => CoverInput, { nullable: true, description: 'null removes the cover.' }) cover?: CoverInput | null;
  @Field(() => [AuthorInput], { nullable: true }) authors?: AuthorInput[];
  @Field(() => [TaxonomyRefInput], { nullable: true }) taxonomy?: TaxonomyRefInput[];
}
