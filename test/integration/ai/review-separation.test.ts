import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../../support/database.js';
import { assistInput, startAiHarness, TENANT_A, type AiHarness } from './support.js';

/**
 * Issue #24, item 6: reviewers never decide their own requests. The requester of an assist may
 * not claim or decide its review task, whatever queues it joins; an admin who steered a waiting
 * task (queue members or routing changed, or the task routed by hand) may not either. GraphQL on
 * the AI subgraph's own door (review has no REST routes).
 */

const SELF = 'usr_01JD00000000000000000SELF0';
const ADMIN = 'usr_01JD00000000000000000ADM00';
const REV1 = 'usr_01JD00000000000000000REV10';
/** Another admin, who sets up the queues unless a test says otherwise. */
const OPS = 'usr_01JD00000000000000000PS000';
const EVERYTHING = 'ai.assist ai.admin ai.review';

type GqlError = { message: string; extensions?: Record<string, unknown> };
const code = (errors: GqlError[] | undefined) => errors?.[0]?.extensions?.code;

const HELD = `mutation($input: AssistInput!) { assist(input: $input) { provenanceId status reviewTaskId } }`;
const CLAIM = `mutation($id: ID!) { claimReviewTask(taskId: $id) { state claimedBy } }`;
const APPROVE = `mutation($id: ID!) { approveReviewTask(taskId: $id) { decision task { decidedBy } } }`;
const REJECT = `mutation($id: ID!) { rejectReviewTask(taskId: $id, reason: "no") { decision } }`;
const EDIT = `mutation($id: ID!) { approveReviewTaskWithEdits(taskId: $id, text: "mine") { decision } }`;

describe.each(databaseKinds())('review separation of duties on %s', (kind) => {
  let ai: AiHarness;
  let facility = 0;

  beforeAll(async () => {
    ai = await startAiHarness(kind, {});
  });
  afterAll(async () => {
    await ai?.close();
  });

  /** A held note summary (HITL required), asked for by `sub`, at a facility of its own unless one is given. */
  async function heldOutput(
    sub: string,
    scope = 'ai.assist',
    facilityId = `fac-sep-${(facility += 1)}`,
  ): Promise<{ taskId: string; facilityId: string }> {
    const input = assistInput('patient_chart.note_summary', { note: 'BP 120/80, stable.' }).input;
    const result = await ai.gql<{ assist: { status: string; reviewTaskId: string } }>(
      HELD,
      { input: { ...input, context: { facilityId, specialty: 'cardiology' } } },
      { scope, sub },
    );
    expect(result.errors, result.raw).toBeUndefined();
    expect(result.data!.assist.status).toBe('pending_review');
    return { taskId: result.data!.assist.reviewTaskId, facilityId };
  }

  async function queueFor(facilityId: string, members: string[], sub = OPS): Promise<string> {
    const created = await ai.gql<{ createReviewQueue: { queueId: string } }>(
      `mutation($input: CreateReviewQueueInput!) { createReviewQueue(input: $input) { queueId } }`,
      { input: { name: `q ${facilityId}`, facilityId, members } },
      { scope: EVERYTHING, sub },
    );
    expect(created.errors, created.raw).toBeUndefined();
    return created.data!.createReviewQueue.queueId;
  }

  const as = (sub: string) => ({ scope: EVERYTHING, sub });
  const act = (document: string, taskId: string, sub: string) => ai.gql(document, { id: taskId }, as(sub));

  it('the requester cannot claim or decide its own output, even after adding itself to the queue', async () => {
    // A tenant admin holding every AI scope asks for the output and makes itself a reviewer.
    const { taskId, facilityId } = await heldOutput(SELF, EVERYTHING);
    await queueFor(facilityId, [SELF, REV1], SELF);

    for (const document of [CLAIM, APPROVE, EDIT, REJECT]) {
      const refused = await act(document, taskId, SELF);
      expect(code(refused.errors), refused.raw).toBe('review.self_review_forbidden');
      expect(refused.errors![0].extensions).toMatchObject({ status: 403, reason: 'requester' });
    }
    expect(await ai.db.prisma.reviewTask.findUniqueOrThrow({ where: { id: taskId } })).toMatchObject({ state: 'open' });

    // Another member decides it.
    expect((await act(CLAIM, taskId, REV1)).data).toMatchObject({ claimReviewTask: { claimedBy: REV1 } });
    expect((await act(APPROVE, taskId, REV1)).data).toMatchObject({
      approveReviewTask: { decision: 'approved', task: { decidedBy: REV1 } },
    });
  });

  it('an admin who joins the queue of a waiting task cannot decide that task, but decides the ones that arrive later', async () => {
    const { taskId, facilityId } = await heldOutput('svc-portal');
    const queueId = await queueFor(facilityId, [REV1]);
    const joined = await ai.gql(
      `mutation($id: ID!) { updateReviewQueue(queueId: $id, input: { members: ["${REV1}", "${ADMIN}"] }) { queueId } }`,
      { id: queueId },
      as(ADMIN),
    );
    expect(joined.errors, joined.raw).toBeUndefined();

    const refused = await act(CLAIM, taskId, ADMIN);
    expect(code(refused.errors), refused.raw).toBe('review.self_review_forbidden');
    expect(refused.errors![0].extensions).toMatchObject({ status: 403, reason: 'steered_while_pending' });
    expect(code((await act(APPROVE, taskId, ADMIN)).errors)).toBe('review.self_review_forbidden');

    // The queue change is audited with what it barred.
    const audits = await ai.db.prisma.outboxEvent.findMany({
      where: { tenantId: TENANT_A, eventType: 'audit.ai.review_queue_updated' },
    });
    const details = audits.map((row) => (row.envelope as { payload: { details: Record<string, unknown> } }).payload.details);
    expect(details).toContainEqual(expect.objectContaining({ queueId, waitingTasksBarredForAuthor: 1 }));

    // A task that arrives after the change is the admin's to review like any member's.
    const { taskId: later } = await heldOutput('svc-portal', 'ai.assist', facilityId);
    expect((await act(CLAIM, later, ADMIN)).data).toMatchObject({ claimReviewTask: { claimedBy: ADMIN } });
    expect((await act(APPROVE, later, ADMIN)).data).toMatchObject({ approveReviewTask: { decision: 'approved' } });
  });

  it('a rename steers nothing; a routing change made while a claim is held bars its author and hands the task back', async () => {
    const { taskId, facilityId } = await heldOutput('svc-portal');
    const queueId = await queueFor(facilityId, [REV1, ADMIN]);
    const update = (input: string) =>
      ai.gql(`mutation($id: ID!) { updateReviewQueue(queueId: $id, input: ${input}) { queueId } }`, { id: queueId }, as(ADMIN));

    expect((await act(CLAIM, taskId, ADMIN)).data).toMatchObject({ claimReviewTask: { claimedBy: ADMIN } });
    expect((await update(`{ name: "renamed ${facilityId}" }`)).errors).toBeUndefined();
    expect(await ai.db.prisma.reviewTask.findUniqueOrThrow({ where: { id: taskId } })).toMatchObject({
      state: 'claimed',
      claimedBy: ADMIN,
      // Only the queue's creator, whose new queue took the waiting task.
      steeredBy: [OPS],
    });

    expect((await update(`{ specialty: "cardiology" }`)).errors).toBeUndefined();
    expect(await ai.db.prisma.reviewTask.findUniqueOrThrow({ where: { id: taskId } })).toMatchObject({
      state: 'open',
      claimedBy: null,
      steeredBy: [OPS, ADMIN],
    });
    expect(code((await act(APPROVE, taskId, ADMIN)).errors)).toBe('review.self_review_forbidden');
    expect((await act(CLAIM, taskId, REV1)).data).toMatchObject({ claimReviewTask: { claimedBy: REV1 } });
  });

  it('an admin who routes a waiting task by hand cannot decide it', async () => {
    const { taskId } = await heldOutput('svc-portal');
    // No queue matches the task's facility; the admin's own catch-all-like queue for another facility takes it by hand.
    const queueId = await queueFor('fac-elsewhere', [REV1, ADMIN]);
    const routed = await ai.gql(
      `mutation($t: ID!, $q: ID!) { routeReviewTask(taskId: $t, queueId: $q) { taskId queueId } }`,
      { t: taskId, q: queueId },
      as(ADMIN),
    );
    expect(routed.errors, routed.raw).toBeUndefined();
    expect(code((await act(CLAIM, taskId, ADMIN)).errors)).toBe('review.self_review_forbidden');
    expect((await act(CLAIM, taskId, REV1)).data).toMatchObject({ claimReviewTask: { claimedBy: REV1 } });
  });
});
