import { Directive, Field, ID, Int, ObjectType } from 'type-graphql';
import { GraphQLJSONObject } from '../../../platform/graphql/scalars.js';

@ObjectType({ simpleResolvers: true })
export class ModuleSummary {
  @Field(() => String) id: string;
  @Field(() => GraphQLJSONObject) title: Record<string, string>;
  @Field(() => Int) lessonCount: number;
  @Field(() => Int) durationMinutes: number;
  @Field(() => Boolean) hasAssessments: boolean;
}

@ObjectType({ simpleResolvers: true })
export class PlayPackage {
  @Field(() => String) playPackageId: string;
  @Field(() => String) sha256: string;
  @Field(() => String, { description: 'v1 or v2.' }) format: string;
}

@Directive('@key(fields: "courseVersionId")')
@ObjectType({ simpleResolvers: true, description: 'A published version of a course, created when its play package is built.' })
export class CourseVersion {
  @Field(() => ID) courseVersionId: string;
  @Field(() => String) courseId: string;
  @Field(() => String, { description: 'major.minor.patch' }) versionLabel: string;
  @Field(() => String) publishedBy: string;
  @Field(() => Int) durationMinutes: number;
  @Field(() => Int, { nullable: true }) estimatedReadingMinutes?: number | null;
  @Field(() => [String]) locales: string[];
  @Field(() => [ModuleSummary], { nullable: true }) moduleSummaries?: ModuleSummary[] | null;
  @Field(() => PlayPackage) playPackage: PlayPackage;
  @Field(() => Boolean) becameLatest: boolean;
  @Field(() => GraphQLJSONObject, { nullable: true }) changelog?: Record<string, string> | null;
  @Field(() => String, { description: 'published, deprecated or withdrawn.' }) state: string;
  @Field(() => Int, { description: 'Position in the course publish order.' }) sequence: number;
  @Field(() => Date) createdAt: Date;
}

@ObjectType({ simpleResolvers: true, description: 'The answer of withdrawCourseVersion.' })
export class CourseVersionWithdrawal {
  @Field(() => CourseVersion) courseVersion: CourseVersion;
  @Field(() => Int, { description: 'Approximate number of active enrollments on the version, from the enrollment service.' })
  affectedEnrollmentsApprox: number;
  @Field(() => String, {
    description: 'Where the count comes from; none-configured means no enrollment service was asked and 0 is not a fact.',
  })
  enrollmentCountSource: string;
}
