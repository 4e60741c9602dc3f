import DataLoader from 'dataloader';
import { Arg, Ctx, Directive, Field, ID, Int, ObjectType, Query, Resolver, FieldResolver, Root } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import { badInput } from '../../../platform/errors/errors.js';
import { isId } from '../../../platform/ids.js';
import type { AiContext } from '../context.js';
import { AI_ASSIST, PROVENANCE_READ } from '../scopes.js';
import type { AIProvenance as ProvenanceRow } from '../../../prisma/generated/client.js';
import { findLatestProvenanceBySubjects, findProvenance, toProvenance } from './provenance.repo.js';
import { releasedText, rememberReleasedTexts } from './released-text.js';
import { AIProvenance } from './provenance.type.js';

export function requireProvenanceId(value: string): string {
  if (!isId('provenance', value)) throw badInput('provenanceId is not a provenance id', { argument: 'provenanceId' });
  return value;
}

/** The catalog's Course, seen from the AI subgraph: AI-assisted outputs whose subject is the course. */
@Directive('@key(fields: "courseId")')
@ObjectType({ simpleResolvers: true })
export class Course {
  @Field(() => ID) courseId: string;
}

@Resolver(() => AIProvenance)
export class ProvenanceResolver {
  @Query(() => AIProvenance, {
    nullable: true,
    description: "A provenance record of the caller's tenant (scope ai.assist, ai.review or ai.admin).",
  })
  async provenance(@Arg('provenanceId', () => ID) provenanceId: string, @Ctx() ctx: AiContext): Promise<AIProvenance | null> {
    requireAnyScope(ctx.principal, PROVENANCE_READ);
    return provenanceOf(ctx, await findProvenance(ctx.db, ctx.tenantId, requireProvenanceId(provenanceId)));
  }

  @FieldResolver(() => String, {
    nullable: true,
    description:
      'The output a reviewer released (as generated, or as edited), readable with scope ai.assist until its retention ends (AI_REVIEW_TEXT_RETENTION_HOURS after the decision); null before a decision, after a rejection and after the purge.',
  })
  releasedText(@Root() provenance: AIProvenance, @Ctx() ctx: AiContext): string | null | Promise<string | null> {
    requireAnyScope(ctx.principal, AI_ASSIST);
    // Kept beside the record, not on it (released-text.ts); at once when the request read its row.
    return releasedText(ctx, provenance.provenanceId);
  }
}

@Resolver(() => Course)
export class CourseProvenanceResolver {
  @FieldResolver(() => [AIProvenance], {
    description:
      'AI-assisted outputs recorded with this course as subjectRef, newest first (scope ai.assist, ai.review or ai.admin).',
  })
  async aiProvenance(
    @Root() course: Course,
    @Arg('first', () => Int, { nullable: true, defaultValue: 10 }) first: number,
    @Ctx() ctx: AiContext,
  ): Promise<AIProvenance[]> {
    requireAnyScope(ctx.principal, PROVENANCE_READ);
    if (first < 1 || first > 100) throw badInput('first must be between 1 and 100', { argument: 'first' });
    return (await provenanceBySubject(ctx, first).load(course.courseId)).map(toProvenance);
  }
}

/**
 * Per request (the context object) and per `first` (one batch takes one limit): every course of
 * an `_entities` call is answered by one statement instead of one query per course.
 */
const subjectLoaders = new WeakMap<AiContext, Map<number, DataLoader<string, ProvenanceRow[]>>>();

function provenanceBySubject(ctx: AiContext, first: number): DataLoader<string, ProvenanceRow[]> {
  let byFirst = subjectLoaders.get(ctx);
  if (!byFirst) subjectLoaders.set(ctx, (byFirst = new Map()));
  let loader = byFirst.get(first);
  if (!loader) {
    loader = new DataLoader(async (subjectRefs) => {
      const grouped = new Map<string, ProvenanceRow[]>(subjectRefs.map((ref) => [ref, []]));
      const rows = await findLatestProvenanceBySubjects(ctx.db, ctx.tenantId, subjectRefs, first);
      rememberReleasedTexts(ctx, rows);
      for (const row of rows) grouped.get(row.subjectRef!)?.push(row);
      // Newest first within each subject, as a per-course query ordered them (the sort is stable).
      return subjectRefs.map((ref) => grouped.get(ref)!.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime()));
    });
    byFirst.set(first, loader);
  }
  return loader;
}

export async function resolveProvenanceReference(ref: { provenanceId: string }, ctx: AiContext): Promise<AIProvenance | null> {
  requireAnyScope(ctx.principal, PROVENANCE_READ);
  return provenanceOf(ctx, await findProvenance(ctx.db, ctx.tenantId, requireProvenanceId(ref.provenanceId)));
}

/** A row read whole: its released text is remembered for the request, the record carries none. */
function provenanceOf(ctx: AiContext, row: ProvenanceRow | null): AIProvenance | null {
  if (!row) return null;
  rememberReleasedTexts(ctx, [row]);
  return toProvenance(row);
}
