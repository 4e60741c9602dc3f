import { Field, InputType, Int, ObjectType } from 'type-graphql';

@InputType({ description: "Selects dead letters of the caller's tenant; all given conditions must hold." })
export class DeadLetterFilterInput {
  @Field(() => String, {
    nullable: true,
    description: 'Original subject, NATS wildcards allowed, e.g. content.play_package.built.v1 or content.>.',
  })
  subject?: string;
  @Field(() => String, { nullable: true }) eventType?: string;
  @Field(() => Date, { nullable: true, description: 'Dead-lettered at or after.' }) from?: Date;
  @Field(() => Date, { nullable: true, description: 'Dead-lettered before.' }) to?: Date;
  @Field(() => [String], { nullable: true }) eventIds?: string[];
  @Field(() => Int, { nullable: true, description: '1 to 1000; default 1000.' }) maxCount?: number;
  @Field(() => Boolean, { nullable: true, description: 'List what would be replayed and change nothing.' }) dryRun?: boolean;
}

@ObjectType({ simpleResolvers: true })
export class DeadLetter {
  @Field(() => Int, { description: 'Sequence in the dead-letter stream.' }) seq: number;
  @Field(() => String) originalSubject: string;
  @Field(() => String, { nullable: true }) eventId?: string;
  @Field(() => String, { nullable: true }) eventType?: string;
  @Field(() => String, { nullable: true }) consumer?: string;
  @Field(() => String) deadLetteredAt: string;
  @Field(() => String, { nullable: true }) error?: string;
  @Field(() => Int, { nullable: true }) retries?: number;
}

@ObjectType({ simpleResolvers: true })
export class DeadLetterReplayResult {
  @Field(() => Int) matched: number;
  @Field(() => Int) replayed: number;
  @Field(() => Boolean) dryRun: boolean;
  @Field(() => [DeadLetter]) letters: DeadLetter[];
}
