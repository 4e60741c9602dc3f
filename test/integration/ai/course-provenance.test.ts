import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { newId } from '../../../platform/ids.js';
import { databaseKinds } from '../../support/database.js';
import type { AiContext } from '../../../subgraphs/ai/context.js';
import { releasedText } from '../../../subgraphs/ai/provenance/released-text.js';
import { startAiHarness, TENANT_A, TENANT_B, type AiHarness } from './support.js';

const ENTITIES = `query($r: [_Any!]!, $first: Int) {
  _entities(representations: $r) { ... on Course { courseId aiProvenance(first: $first) { provenanceId subjectRef } } }
}`;

type Review = { reviewState?: string | null; heldText?: string | null };

/** A review state and the held text it leaves; the last column is what releasedText answers. */
const RELEASED_CASES: Array<[string | null, string | null, string | null]> = [
  ['approved', 'the text as generated', 'the text as generated'],
  ['approved_with_edits', 'the text as edited', 'the text as edited'],
  ['pending', 'waiting for a reviewer', null],
  ['rejected', null, null],
  [null, null, null],
];

type Entities = { _entities: Array<{ courseId: string; aiProvenance: Array<{ provenanceId: string; subjectRef: string }> }> };

// Course.aiProvenance is batched (one statement for every course of an _entities call): each
// course still gets its own newest rows, only its tenant's, at most `first`.
describe.each(databaseKinds())('Course.aiProvenance on %s', (kind) => {
  let ai: AiHarness;
  const [courseA, courseB, courseC] = [newId('course'), newId('course'), newId('course')];
  const rows: Record<string, string[]> = {};
  const courseD = newId('course');
  const released: Record<string, string> = {};

  beforeAll(async () => {
    ai = await startAiHarness(kind, {});
    const record = async (tenantId: string, subjectRef: string, minutesAgo: number, review: Review = {}) => {
      const id = newId('provenance');
      await ai.db.prisma.aIProvenance.create({
        data: {
          id,
          tenantId,
          actorType: 'service',
          actorId: 'svc-test',
          featureKey: 'course.summary',
          status: 'completed',
          subjectRef,
          createdAt: new Date(Date.now() - minutesAgo * 60_000),
          ...review,
        },
      });
      return id;
    };
    // Inserted out of time order, so the answer's order has to come from createdAt.
    rows[courseA] = [await record(TENANT_A, courseA, 3), await record(TENANT_A, courseA, 1), await record(TENANT_A, courseA, 2)];
    rows[courseB] = [await record(TENANT_A, courseB, 5)];
    await record(TENANT_B, courseA, 0);
    // Held text in every review state: only a reviewer's release makes it readable.
    for (const [reviewState, heldText] of RELEASED_CASES) {
      released[reviewState ?? 'none'] = await record(TENANT_A, courseD, 10, { reviewState, heldText });
    }
    // Another tenant's record with released text on the same course: never part of tenant A's answer.
    await record(TENANT_B, courseD, 0, { reviewState: 'approved', heldText: 'tenant B text' });
  });
  afterAll(async () => ai?.close());

  it('answers every course of one _entities call with its own newest rows, newest first', async () => {
    const representations = [courseA, courseB, courseC].map((courseId) => ({ __typename: 'Course', courseId }));
    const result = await ai.gql<Entities>(ENTITIES, { r: representations, first: 2 });
    expect(result.errors).toBeUndefined();
    const [, newest, middle] = rows[courseA];
    expect(result.data!._entities).toEqual([
      { courseId: courseA, aiProvenance: [newest, middle].map((provenanceId) => ({ provenanceId, subjectRef: courseA })) },
      { courseId: courseB, aiProvenance: [{ provenanceId: rows[courseB][0], subjectRef: courseB }] },
      { courseId: courseC, aiProvenance: [] },
    ]);
  });

  it('keeps the default of 10 and different limits in one request apart', async () => {
    const query = `query($r: [_Any!]!) {
      _entities(representations: $r) { ... on Course { all: aiProvenance { provenanceId } one: aiProvenance(first: 1) { provenanceId } } }
    }`;
    const result = await ai.gql<{ _entities: Array<{ all: unknown[]; one: unknown[] }> }>(query, {
      r: [{ __typename: 'Course', courseId: courseA }],
    });
    expect(result.errors).toBeUndefined();
    expect(result.data!._entities[0].all).toHaveLength(3);
    expect(result.data!._entities[0].one).toEqual([{ provenanceId: rows[courseA][1] }]);
  });

  it('never shows another tenant its rows', async () => {
    const result = await ai.gql<Entities>(
      ENTITIES,
      { r: [{ __typename: 'Course', courseId: courseA }], first: 10 },
      { tenantId: TENANT_B },
    );
    expect(result.errors).toBeUndefined();
    expect(result.data!._entities[0].aiProvenance).toHaveLength(1);
    expect(rows[courseA]).not.toContain(result.data!._entities[0].aiProvenance[0].provenanceId);
  });

  it('answers releasedText for every record of one _entities call from the rows aiProvenance read, each its own', async () => {
    const query = `query($r: [_Any!]!) {
      _entities(representations: $r) { ... on Course { courseId aiProvenance(first: 10) { provenanceId reviewState releasedText } } }
    }`;
    const findMany = vi.spyOn(ai.db.prisma.aIProvenance, 'findMany');
    const findFirst = vi.spyOn(ai.db.prisma.aIProvenance, 'findFirst');
    const result = await ai.gql<{
      _entities: Array<{
        aiProvenance: Array<{ provenanceId: string; reviewState: string | null; releasedText: string | null }>;
      }>;
    }>(query, { r: [courseD, courseA].map((courseId) => ({ __typename: 'Course', courseId })) }, { scope: 'ai.assist' });
    const statements = findMany.mock.calls.length + findFirst.mock.calls.length;
    findMany.mockRestore();
    findFirst.mockRestore();
    expect(result.errors).toBeUndefined();
    const [d, a] = result.data!._entities;
    expect(d.aiProvenance).toHaveLength(RELEASED_CASES.length);
    const byId = new Map(d.aiProvenance.map((p) => [p.provenanceId, p]));
    for (const [reviewState, , answer] of RELEASED_CASES) {
      expect(byId.get(released[reviewState ?? 'none'])).toEqual({
        provenanceId: released[reviewState ?? 'none'],
        reviewState,
        releasedText: answer,
      });
    }
    expect(a.aiProvenance.map((p) => p.releasedText)).toEqual([null, null, null]);
    // No read of its own: the texts come from the rows of aiProvenance's one raw statement.
    expect(statements).toBe(0);
  });

  it('reads the released text of records the request did not read whole in one statement, of its tenant only', async () => {
    const findMany = vi.spyOn(ai.db.prisma.aIProvenance, 'findMany');
    const ctx = (tenantId: string) => ({ db: ai.db.prisma, tenantId }) as unknown as AiContext;
    const tenantA = ctx(TENANT_A);
    const ids = RELEASED_CASES.map(([reviewState]) => released[reviewState ?? 'none']);
    const texts = await Promise.all(ids.map((id) => releasedText(tenantA, id)));
    const statements = findMany.mock.calls.length;
    const otherTenant = await releasedText(ctx(TENANT_B), released.approved);
    findMany.mockRestore();
    expect(texts).toEqual(RELEASED_CASES.map(([, , answer]) => answer));
    expect(statements).toBe(1);
    expect(otherTenant).toBeNull();
  });
});
