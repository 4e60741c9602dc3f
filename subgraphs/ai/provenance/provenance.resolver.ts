import DataLoader from 'dataloader';
import { Arg, Ctx, Directive, Field, ID, Int, ObjectType, Query, Resolver, FieldResolver, Root } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import { badInput } from '../../../platform/errors.js';
import { RELEASED_REVIEW_STATES } from '../review/review.logic.js';
import { isId } from '../../../platform/ids.js';
import type { AiContext } from '../context.js';
import { AI_ASSIST, PROVENANCE_READ } from '../scopes.js';
import type { AIProvenance as ProvenanceRow } from '../../../prisma/generated/client.js';
import { findHeldTexts, findLatestProvenanceBySubjects, findProvenance, toProvenance, type HeldText } from './provenance.repo.js';
import { AIProvenance } from './provenance.type.js';

export function requireProvenanceId(value: string): string {
  if (!isId('provenance', value)) throw badInput('provenanceId is not a provenance id', { argument: 'provenanceId' });
  return value;
}

/** The catalog's Course, seen from the AI subgraph: AI-assisted outputs whose subject is the course. */
@Directive('@key(fields: "courseId")')
@ObjectType()
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
    const row = await findProvenance(ctx.db, ctx.tenantId, requireProvenanceId(provenanceId));
    return row ? toProvenance(row) : null;
  }

  @FieldResolver(() => String, {
    nullable: true,
    description:
      'The output a reviewer released (as generated, or as edited), readable with scope ai.assist until its retention ends (AI_REVIEW_TEXT_RETENTION_HOURS after the decision); null before a decision, after a rejection and after the purge.',
  })
  async releasedText(@Root() provenance: AIProvenance, @Ctx() ctx: AiContext): Promise<string | null> {
    requireAnyScope(ctx.principal, AI_ASSIST);
    // Read here rather than carried on the record: held text never travels with a provenance
    // object that other fields or resolvers could expose.
    return heldTextLoader(ctx).load(provenance.provenanceId);
  }
}

/** Per request (the context object): the released text of every record the request reads, in one statement. */
const heldTextLoaders = new WeakMap<AiContext, DataLoader<string, string | null>>();

function heldTextLoader(ctx: AiContext): DataLoader<string, string | null> {
  let loader = heldTextLoaders.get(ctx);
  if (!loader) {
    loader = new DataLoader(async (ids) => {
      const rows = new Map((await findHeldTexts(ctx.db, ctx.tenantId, ids)).map((row) => [row.id, row]));
      return ids.map((id) => releasedTextOf(rows.get(id)));
    });
    heldTextLoaders.set(ctx, loader);
  }
  return loader;
}

/** The held text once a reviewer released it (as generated or edited); null before, after a rejection, or for no such record. */
function releasedTextOf(row: HeldText | undefined): string | null {
  return row && row.reviewState !== null && RELEASED_REVIEW_STATES.has(row.reviewState) ? row.heldText : null;
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
      for (const row of await findLatestProvenanceBySubjects(ctx.db, ctx.tenantId, subjectRefs, first)) {
        grouped.get(row.subjectRef!)?.push(row);
      }
      // Newest first within each subject, as a per-course query ordered them (the sort is stable).
      return subjectRefs.map((ref) => grouped.get(ref)!.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime()));
    });
    byFirst.set(first, loader);
  }
  return loader;
}

export async function resolveProvenanceReference(ref: { provenanceId: string }, ctx: AiContext): Promise<AIProvenance | null> {
  requireAnyScope(ctx.principal, PROVENANCE_READ);
  const row = await findProvenance(ctx.db, ctx.tenantId, requireProvenanceId(ref.provenanceId));
  return row ? toProvenance(row) : null;
}
