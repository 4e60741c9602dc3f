import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../../platform/clock.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { createMetrics, type Metrics } from '../../../platform/observability/metrics.js';
import { aiMetrics } from '../../../subgraphs/ai/metrics.js';
import { seedBaseline } from '../../../subgraphs/ai/seed.js';
import { outputHash } from '../../../subgraphs/ai/provenance/provenance.logic.js';
import { applyDiff, type DiffOp } from '../../../platform/text/text-diff.logic.js';
import { databaseKinds, testDatabaseKind } from '../../support/database.js';
import {
  ASSIST,
  assistInput,
  listen,
  startAiHarness,
  startFakeOpenAi,
  TENANT_A,
  TENANT_B,
  type AiHarness,
  type FakeOpenAi,
  type Listening,
} from './support.js';

const TENANT_C = 'ten_01JD0000000000000000000C00';
const ADMIN = 'usr_01JD00000000000000000ADM00';
const REV1 = 'usr_01JD00000000000000000REV10';
const REV2 = 'usr_01JD00000000000000000REV20';
const OUTSIDER = 'usr_01JD00000000000000000XXX00';
const MINUTE = 60_000;

type GqlError = { message: string; extensions?: Record<string, unknown> };
type Assist = {
  provenanceId: string;
  status: string;
  text: string | null;
  code: string | null;
  moderationCategories: string[] | null;
  reviewTaskId: string | null;
  reviewState: string | null;
  provider: string | null;
  outputHash: string | null;
};
const ASSIST_FULL = ASSIST.replace('provenanceId status', 'provenanceId status code moderationCategories reviewTaskId');
const note = (
  text: string,
  context: { facilityId: string; specialty: string } = { facilityId: 'fac-001', specialty: 'cardiology' },
) => ({
  input: { ...assistInput('patient_chart.note_summary', { note: text }).input, context },
});
const code = (errors: GqlError[] | undefined) => errors?.[0]?.extensions?.code;

describe.each(databaseKinds())('AI governance and rollout on %s', (kind) => {
  let ai: AiHarness;
  let hosted: FakeOpenAi;
  let onPrem: FakeOpenAi;
  let metrics: Metrics;
  // The clock of the subgraph: tests move it to expire claims and retention windows.
  let offsetMs = 0;
  const clock: Clock = { now: () => new Date(Date.now() + offsetMs) };

  const admin = { scope: 'ai.admin', sub: ADMIN };
  const reviewer = (sub: string, tenantId = TENANT_A) => ({ scope: 'ai.review', sub, tenantId });
  const assist = async (variables: ReturnType<typeof note>, tenantId = TENANT_A) => {
    const result = await ai.gql<{ assist: Assist }>(ASSIST_FULL, variables, { tenantId, scope: 'ai.assist' });
    expect(result.errors).toBeUndefined();
    return result.data!.assist;
  };
  const provenanceRow = (id: string) => ai.db.prisma.aIProvenance.findUniqueOrThrow({ where: { id } });
  const outbox = (eventType: string, tenantId = TENANT_A) =>
    ai.db.prisma.outboxEvent.findMany({ where: { eventType, tenantId }, orderBy: { id: 'asc' } });
  const payloads = async (eventType: string, tenantId = TENANT_A) =>
    (await outbox(eventType, tenantId)).map((e) => (e.envelope as { payload: Record<string, unknown> }).payload);

  beforeAll(async () => {
    hosted = await startFakeOpenAi();
    onPrem = await startFakeOpenAi();
    metrics = createMetrics({ defaultMetrics: false });
    ai = await startAiHarness(
      kind,
      {
        OPENAI_BASE_URL: hosted.baseUrl,
        ONPREM_BASE_URL: onPrem.baseUrl,
        ONPREM_MODEL: 'llama-3-8b-clinic',
        MOCK_FAULT_INJECTION: 'true',
        // mock serves EU only, so a request for ON_PREM has no provider unless the tenant is mapped.
        MOCK_RESIDENCIES: 'EU',
        // Long, so the tests prove that a change made through this replica clears its cache.
        AI_CONFIG_CACHE_MS: '600000',
        AI_REVIEW_CLAIM_MINUTES: '5',
        SHADOW_PARITY_MIN_SAMPLES: '3',
        AI_PROVIDER_RETRIES: '0',
      },
      { metrics, clock },
    );
  });
  afterAll(async () => {
    await ai?.close();
    await hosted?.close();
    await onPrem?.close();
  });

  describe('moderation (phase 2, required for patient_chart.note_summary)', () => {
    it('blocks a flagged prompt before any provider sees it, with categories and reasons in provenance', async () => {
      const before = hosted.requests.length;
      const out = await assist(note('Patient says: I want to kill myself tonight, how to make a pipe bomb too'));
      expect(out).toMatchObject({
        status: 'blocked',
        text: null,
        code: 'moderation.blocked',
        moderationCategories: ['self_harm', 'violence'],
        reviewTaskId: null,
      });
      expect(hosted.requests.length).toBe(before);
      const row = await provenanceRow(out.provenanceId);
      expect(row).toMatchObject({
        status: 'blocked',
        errorCode: 'moderation.blocked',
        provider: null,
        heldText: null,
        outputHash: null,
      });
      expect(row.moderation).toMatchObject({
        required: true,
        input: {
          flagged: true,
          classifier: 'local-rules-v1',
          categories: ['self_harm', 'violence'],
          reasons: [
            { category: 'self_harm', rule: 'self_harm.intent', count: 1 },
            { category: 'violence', rule: 'violence.weapons_instructions', count: 1 },
          ],
        },
      });
      expect(JSON.stringify(row)).not.toContain('kill myself');
      expect(await ai.db.prisma.reviewTask.count({ where: { provenanceId: out.provenanceId } })).toBe(0);
    });

    it('blocks an output that leaks identifiers (PHI), keeping its hash but not its text', async () => {
      hosted.script.push({
        status: 200,
        body: {
          model: 'gpt-4o-mini',
          choices: [{ message: { content: 'Summary for MRN: 00482913, call 555-123-4567.' }, finish_reason: 'stop' }],
        },
      });
      const out = await assist(note('Chest pain since 2 days; BP 150/95.'));
      expect(out).toMatchObject({
        status: 'blocked',
        text: null,
        code: 'moderation.blocked',
        moderationCategories: ['phi'],
        provider: 'openai-compatible',
      });
      const row = await provenanceRow(out.provenanceId);
      expect(row.outputHash).toBe(outputHash('Summary for MRN: 00482913, call 555-123-4567.'));
      expect(row.heldText).toBeNull();
      expect(row.moderation).toMatchObject({
        input: { flagged: false },
        output: { flagged: true, categories: ['phi'], reasons: [{ rule: 'phi.mrn' }, { rule: 'phi.phone' }] },
      });
      expect(JSON.stringify(row)).not.toContain('00482913');
    });

    it('lets a clean note through to review (HITLPolicy required is seeded for note_summary)', async () => {
      const out = await assist(note('Chest pain since 2 days; BP 150/95.'));
      expect(out).toMatchObject({ status: 'pending_review', text: null, reviewState: 'pending', code: null });
      expect(out.reviewTaskId).toMatch(/^rvt_/);
      const row = await provenanceRow(out.provenanceId);
      expect(row.moderation).toMatchObject({ required: true, input: { flagged: false }, output: { flagged: false } });
    });

    it('does not moderate features outside AI_MODERATION_FEATURES', async () => {
      const out = await ai.gql<{ assist: Assist }>(
        ASSIST_FULL,
        assistInput('portal.triage', { message: 'I want to kill myself' }),
        { scope: 'ai.assist' },
      );
      expect(out.data!.assist).toMatchObject({ status: 'completed', code: null });
      expect((await provenanceRow(out.data!.assist.provenanceId)).moderation).toBeNull();
    });
  });

  describe('human review', () => {
    let cardiology: string;

    it('manages queues with ai.admin only, refusing duplicate routing', async () => {
      const create = (input: Record<string, unknown>, as: Record<string, string> = admin) =>
        ai.gql<{ createReviewQueue: { queueId: string; members: string[] } }>(
          `mutation($input: CreateReviewQueueInput!) { createReviewQueue(input: $input) { queueId name facilityId specialty members } }`,
          { input },
          as,
        );
      expect(code((await create({ name: 'x', members: [] }, { scope: 'ai.review', sub: REV1 })).errors)).toBe(
        'authz.scope_missing',
      );
      const created = await create({
        name: 'Cardiology fac-001',
        facilityId: 'fac-001',
        specialty: 'cardiology',
        members: [REV1, REV2, REV1],
      });
      expect(created.errors).toBeUndefined();
      cardiology = created.data!.createReviewQueue.queueId;
      expect(created.data!.createReviewQueue.members).toEqual([REV1, REV2]);
      expect(code((await create({ name: 'Another', facilityId: 'fac-001', specialty: 'cardiology', members: [] })).errors)).toBe(
        'request.conflict',
      );
      expect(code((await create({ name: 'Cardiology fac-001', members: [] })).errors)).toBe('request.conflict');
      expect(code((await create({ name: '', members: [] })).errors)).toBe('BAD_USER_INPUT');
      // Tenant B sees none of A's queues.
      const seenByB = await ai.gql<{ reviewQueues: unknown[] }>(
        `{ reviewQueues { queueId } }`,
        {},
        { tenantId: TENANT_B, scope: 'ai.admin' },
      );
      expect(seenByB.data!.reviewQueues).toEqual([]);
    });

    it('routes held outputs to the most specific queue, and picks up unrouted ones when a matching queue appears', async () => {
      const routed = await assist(note('BP 120/80, follow-up.'));
      expect((await ai.db.prisma.reviewTask.findUniqueOrThrow({ where: { id: routed.reviewTaskId! } })).queueId).toBe(cardiology);

      const elsewhere = await assist(note('BP 130/85.', { facilityId: 'fac-002', specialty: 'oncology' }));
      expect((await ai.db.prisma.reviewTask.findUniqueOrThrow({ where: { id: elsewhere.reviewTaskId! } })).queueId).toBeNull();
      expect(ai.logs.some((l) => l.includes('no review queue matches') && l.includes(elsewhere.reviewTaskId!))).toBe(true);
      const unrouted = await ai.gql<{ reviewTasks: Array<{ taskId: string }> }>(
        `{ reviewTasks(unrouted: true) { taskId } }`,
        {},
        admin,
      );
      expect(unrouted.errors).toBeUndefined();
      expect(unrouted.data!.reviewTasks.map((t) => t.taskId)).toContain(elsewhere.reviewTaskId);

      const catchAll = await ai.gql<{ createReviewQueue: { queueId: string } }>(
        `mutation { createReviewQueue(input: { name: "Everything else", members: ["${REV2}"] }) { queueId } }`,
        {},
        admin,
      );
      const task = await ai.db.prisma.reviewTask.findUniqueOrThrow({ where: { id: elsewhere.reviewTaskId! } });
      expect(task.queueId).toBe(catchAll.data!.createReviewQueue.queueId);
      // The cardiology task stays where the more specific queue put it.
      expect((await ai.db.prisma.reviewTask.findUniqueOrThrow({ where: { id: routed.reviewTaskId! } })).queueId).toBe(cardiology);
    });

    it('shows the held text only to the reviewer holding the claim, and only to members', async () => {
      const out = await assist(note('Dyspnoea on exertion.'));
      const taskId = out.reviewTaskId!;
      const read = (as: Record<string, string>) =>
        ai.gql<{ reviewTask: { state: string; text: string | null } | null }>(
          `query($id: ID!) { reviewTask(taskId: $id) { state text claimedBy } }`,
          { id: taskId },
          as,
        );
      const claim = (as: Record<string, string>) =>
        ai.gql<{ claimReviewTask: { state: string; claimedBy: string } }>(
          `mutation($id: ID!) { claimReviewTask(taskId: $id) { state claimedBy version } }`,
          { id: taskId },
          as,
        );

      expect((await read(reviewer(REV1))).data!.reviewTask).toMatchObject({ state: 'open', text: null });
      expect((await read(reviewer(OUTSIDER))).data!.reviewTask).toBeNull();
      expect(code((await claim(reviewer(OUTSIDER))).errors)).toBe('review.not_a_member');
      expect(code((await claim({ scope: 'ai.assist', sub: REV1 })).errors)).toBe('authz.scope_missing');
      expect(code((await claim(reviewer(REV1, TENANT_B))).errors)).toBe('request.not_found');

      expect((await claim(reviewer(REV1))).data!.claimReviewTask).toMatchObject({ state: 'claimed', claimedBy: REV1 });
      expect((await read(reviewer(REV1))).data!.reviewTask!.text).toMatch(/^hosted answer/);
      expect((await read(reviewer(REV2))).data!.reviewTask!.text).toBeNull();
      expect((await read(admin)).data!.reviewTask!.text).toBeNull();
      const taken = await claim(reviewer(REV2));
      expect(code(taken.errors)).toBe('review.claimed_by_other');
      expect(taken.errors![0].extensions!.status).toBe(409);
    });

    it('approves: exactly one of concurrent decisions wins, the text is released to ai.assist and announced', async () => {
      const out = await assist(note('Palpitations, ECG normal.'));
      const taskId = out.reviewTaskId!;
      await ai.gql(`mutation($id: ID!) { claimReviewTask(taskId: $id) { state } }`, { id: taskId }, reviewer(REV1));
      const decisions = await Promise.all([
        ...Array.from({ length: 4 }, () =>
          ai.gql(
            `mutation($id: ID!) { approveReviewTask(taskId: $id) { decision releasedTextHash } }`,
            { id: taskId },
            reviewer(REV1),
          ),
        ),
        ...Array.from({ length: 4 }, () =>
          ai.gql(
            `mutation($id: ID!) { rejectReviewTask(taskId: $id, reason: "no") { decision } }`,
            { id: taskId },
            reviewer(REV1),
          ),
        ),
      ]);
      const winners = decisions.filter((d) => !d.errors);
      expect(winners).toHaveLength(1);
      expect(decisions.filter((d) => d.errors).map((d) => code(d.errors))).toEqual(Array(7).fill('review.already_decided'));
      const [winner] = Object.values(winners[0].data as Record<string, { decision: string }>);
      expect(['approved', 'rejected']).toContain(winner.decision);
      expect(await ai.db.prisma.reviewTask.findUniqueOrThrow({ where: { id: taskId } })).toMatchObject({
        state: 'decided',
        decision: winner.decision,
        decidedBy: REV1,
      });
      const events = (await payloads('ai.review.completed')).filter((p) => p.taskId === taskId);
      expect(events).toHaveLength(1);
      expect(
        (await payloads('audit.ai.review_decided')).filter(
          (p) => (p.details as { provenanceId: string }).provenanceId === out.provenanceId,
        ),
      ).toHaveLength(1);

      // Whichever won, a second task decided plainly shows the approved path end to end.
      const next = await assist(note('Syncope episode, now resolved.'));
      await ai.gql(`mutation($id: ID!) { claimReviewTask(taskId: $id) { state } }`, { id: next.reviewTaskId }, reviewer(REV2));
      const approved = await ai.gql<{
        approveReviewTask: { decision: string; releasedTextHash: string; task: { state: string } };
      }>(
        `mutation($id: ID!) { approveReviewTask(taskId: $id) { decision releasedTextHash provenanceId task { state decidedBy } } }`,
        { id: next.reviewTaskId },
        reviewer(REV2),
      );
      expect(approved.data!.approveReviewTask).toMatchObject({
        decision: 'approved',
        releasedTextHash: next.outputHash,
        task: { state: 'decided' },
      });
      const released = await ai.gql<{
        provenance: { status: string; reviewState: string; releasedText: string; review: Record<string, unknown> };
      }>(
        `query($id: ID!) { provenance(provenanceId: $id) { status reviewState releasedText review } }`,
        { id: next.provenanceId },
        { scope: 'ai.assist' },
      );
      expect(released.data!.provenance).toMatchObject({
        status: 'completed',
        reviewState: 'approved',
        review: { decision: 'approved', decidedBy: REV2 },
      });
      expect(outputHash(released.data!.provenance.releasedText)).toBe(next.outputHash);
      const noScope = await ai.gql(
        `query($id: ID!) { provenance(provenanceId: $id) { releasedText } }`,
        { id: next.provenanceId },
        admin,
      );
      expect(code(noScope.errors as GqlError[])).toBe('authz.scope_missing');
      const crossTenant = await ai.gql<{ provenance: unknown }>(
        `query($id: ID!) { provenance(provenanceId: $id) { releasedText } }`,
        { id: next.provenanceId },
        { tenantId: TENANT_B, scope: 'ai.assist' },
      );
      expect(crossTenant.data!.provenance).toBeNull();
      const [event] = (await payloads('ai.review.completed')).filter((p) => p.taskId === next.reviewTaskId);
      expect(event).toMatchObject({
        provenanceId: next.provenanceId,
        decision: 'approved',
        decidedBy: REV2,
        outputHash: next.outputHash,
        releasedTextHash: next.outputHash,
        featureKey: 'patient_chart.note_summary',
      });
      const [envelope] = (await outbox('ai.review.completed')).filter(
        (e) => (e.envelope as { payload: { taskId: string } }).payload.taskId === next.reviewTaskId,
      );
      expect(envelope).toMatchObject({ subject: 'ai.review.completed.v1', partitionKey: next.provenanceId });
      expect(JSON.stringify(envelope.envelope)).not.toContain(released.data!.provenance.releasedText);
    });

    it('approves with edits: the edited text is released and the line diff kept on the task', async () => {
      const out = await assist(note('Hypertension, on ramipril.'));
      await ai.gql(`mutation($id: ID!) { claimReviewTask(taskId: $id) { state } }`, { id: out.reviewTaskId }, reviewer(REV1));
      const original = (await provenanceRow(out.provenanceId)).heldText!;
      const edited = `${original}\nReviewed: continue ramipril 5 mg.`;
      const same = await ai.gql(
        `mutation($id: ID!, $t: String!) { approveReviewTaskWithEdits(taskId: $id, text: $t) { decision } }`,
        { id: out.reviewTaskId, t: original },
        reviewer(REV1),
      );
      expect(code(same.errors)).toBe('BAD_USER_INPUT');
      const result = await ai.gql<{
        approveReviewTaskWithEdits: { decision: string; releasedTextHash: string; task: { editDiff: DiffOp[] } };
      }>(
        `mutation($id: ID!, $t: String!) { approveReviewTaskWithEdits(taskId: $id, text: $t) { decision releasedTextHash task { editDiff } } }`,
        { id: out.reviewTaskId, t: edited },
        reviewer(REV1),
      );
      expect(result.data!.approveReviewTaskWithEdits).toMatchObject({ decision: 'edited', releasedTextHash: outputHash(edited) });
      expect(applyDiff(result.data!.approveReviewTaskWithEdits.task.editDiff)).toEqual({ original, edited });
      const row = await provenanceRow(out.provenanceId);
      expect(row).toMatchObject({ reviewState: 'approved_with_edits', heldText: edited, outputHash: out.outputHash });
      const [event] = (await payloads('ai.review.completed')).filter((p) => p.taskId === out.reviewTaskId);
      expect(event).toMatchObject({ decision: 'edited', outputHash: out.outputHash, releasedTextHash: outputHash(edited) });
    });

    it('rejects with a reason: nothing is released and the held text is dropped', async () => {
      const out = await assist(note('Fever, cough.'));
      await ai.gql(`mutation($id: ID!) { claimReviewTask(taskId: $id) { state } }`, { id: out.reviewTaskId }, reviewer(REV1));
      const noReason = await ai.gql(
        `mutation($id: ID!) { rejectReviewTask(taskId: $id, reason: " ") { decision } }`,
        { id: out.reviewTaskId },
        reviewer(REV1),
      );
      expect(noReason.errors![0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument: 'reason' });
      const rejected = await ai.gql(
        `mutation($id: ID!) { rejectReviewTask(taskId: $id, reason: "Invents a diagnosis") { decision releasedTextHash task { reason } } }`,
        { id: out.reviewTaskId },
        reviewer(REV1),
      );
      expect(rejected.data).toEqual({
        rejectReviewTask: { decision: 'rejected', releasedTextHash: null, task: { reason: 'Invents a diagnosis' } },
      });
      expect(await provenanceRow(out.provenanceId)).toMatchObject({
        status: 'rejected',
        reviewState: 'rejected',
        errorCode: 'review.rejected',
        heldText: null,
      });
      const released = await ai.gql<{ provenance: { releasedText: string | null } }>(
        `query($id: ID!) { provenance(provenanceId: $id) { releasedText } }`,
        { id: out.provenanceId },
        { scope: 'ai.assist' },
      );
      expect(released.data!.provenance.releasedText).toBeNull();
      const [event] = (await payloads('ai.review.completed')).filter((p) => p.taskId === out.reviewTaskId);
      expect(event.decision).toBe('rejected');
      expect(event).not.toHaveProperty('releasedTextHash');
    });

    it('lets an expired claim be taken over; the old holder can no longer decide', async () => {
      const out = await assist(note('Ankle oedema.'));
      await ai.gql(`mutation($id: ID!) { claimReviewTask(taskId: $id) { state } }`, { id: out.reviewTaskId }, reviewer(REV1));
      offsetMs += 6 * MINUTE;
      try {
        const takeover = await ai.gql<{ claimReviewTask: { claimedBy: string } }>(
          `mutation($id: ID!) { claimReviewTask(taskId: $id) { claimedBy } }`,
          { id: out.reviewTaskId },
          reviewer(REV2),
        );
        expect(takeover.data!.claimReviewTask.claimedBy).toBe(REV2);
        const late = await ai.gql(
          `mutation($id: ID!) { approveReviewTask(taskId: $id) { decision } }`,
          { id: out.reviewTaskId },
          reviewer(REV1),
        );
        expect(code(late.errors)).toBe('review.claimed_by_other');
        offsetMs += 6 * MINUTE;
        const expired = await ai.gql(
          `mutation($id: ID!) { approveReviewTask(taskId: $id) { decision } }`,
          { id: out.reviewTaskId },
          reviewer(REV2),
        );
        expect(code(expired.errors)).toBe('review.claim_expired');
        // Claiming again renews one's own (expired) claim; releasing it gives the task back to the queue.
        const renewed = await ai.gql<{ claimReviewTask: { claimedBy: string } }>(
          `mutation($id: ID!) { claimReviewTask(taskId: $id) { claimedBy } }`,
          { id: out.reviewTaskId },
          reviewer(REV2),
        );
        expect(renewed.data!.claimReviewTask.claimedBy).toBe(REV2);
        const given = await ai.gql<{ releaseReviewTask: { state: string; claimedBy: string | null } }>(
          `mutation($id: ID!) { releaseReviewTask(taskId: $id) { state claimedBy } }`,
          { id: out.reviewTaskId },
          reviewer(REV2),
        );
        expect(given.data!.releaseReviewTask).toEqual({ state: 'open', claimedBy: null });
      } finally {
        offsetMs = 0;
      }
    });

    it('expires unreviewed tasks and shrinks edit diffs when the held text passes its retention', async () => {
      const pending = await assist(note('Headache.'));
      const edited = await assist(note('Back pain.'));
      await ai.gql(`mutation($id: ID!) { claimReviewTask(taskId: $id) { state } }`, { id: edited.reviewTaskId }, reviewer(REV1));
      await ai.gql(
        `mutation($id: ID!) { approveReviewTaskWithEdits(taskId: $id, text: "Back pain, reviewed.") { decision } }`,
        { id: edited.reviewTaskId },
        reviewer(REV1),
      );
      const past = new Date(Date.now() - 1000);
      await ai.db.prisma.aIProvenance.updateMany({
        where: { id: { in: [pending.provenanceId, edited.provenanceId] } },
        data: { heldTextExpiresAt: past },
      });
      expect(await ai.services.purgeHeldText()).toBeGreaterThanOrEqual(2);
      expect(await provenanceRow(pending.provenanceId)).toMatchObject({
        heldText: null,
        reviewState: 'expired',
        status: 'rejected',
        errorCode: 'review.expired',
      });
      expect(await ai.db.prisma.reviewTask.findUniqueOrThrow({ where: { id: pending.reviewTaskId! } })).toMatchObject({
        state: 'expired',
      });
      const task = await ai.db.prisma.reviewTask.findUniqueOrThrow({ where: { id: edited.reviewTaskId! } });
      expect(task.editDiff).toEqual({ linesRemoved: 1, linesAdded: 1 });
      expect(await provenanceRow(edited.provenanceId)).toMatchObject({ heldText: null, reviewState: 'approved_with_edits' });
      const claim = await ai.gql(
        `mutation($id: ID!) { claimReviewTask(taskId: $id) { state } }`,
        { id: pending.reviewTaskId },
        reviewer(REV1),
      );
      expect(code(claim.errors)).toBe('review.expired');
    });

    it('lets a tenant set its own HITL policy, effective on the next request', async () => {
      const triage = assistInput('portal.triage', { message: 'sore throat' });
      expect((await ai.gql<{ assist: Assist }>(ASSIST_FULL, triage, { scope: 'ai.assist' })).data!.assist.status).toBe(
        'completed',
      );
      const set = await ai.gql(
        `mutation { setHitlPolicy(featureKey: "portal.triage", mode: "required") { featureKey mode tenantId } }`,
        {},
        admin,
      );
      expect(set.data).toEqual({ setHitlPolicy: { featureKey: 'portal.triage', mode: 'required', tenantId: TENANT_A } });
      expect((await ai.gql<{ assist: Assist }>(ASSIST_FULL, triage, { scope: 'ai.assist' })).data!.assist.status).toBe(
        'pending_review',
      );
      expect(
        (await ai.gql<{ assist: Assist }>(ASSIST_FULL, triage, { tenantId: TENANT_B, scope: 'ai.assist' })).data!.assist.status,
      ).toBe('completed');
      expect(
        code(
          (await ai.gql(`mutation { setHitlPolicy(featureKey: "portal.triage", mode: "sometimes") { mode } }`, {}, admin)).errors,
        ),
      ).toBe('BAD_USER_INPUT');
    });
  });

  describe('rollback switches', () => {
    const setFlag = (input: Record<string, unknown>, as: Record<string, string> = { ...admin, tenantId: TENANT_C }) =>
      ai.gql<{ setFeatureFlag: { featureKey: string; flag: string; enabled: boolean; updatedBy: string } }>(
        `mutation($input: SetFeatureFlagInput!) { setFeatureFlag(input: $input) { featureKey flag enabled updatedBy } }`,
        { input },
        as,
      );

    it('hitl.enabled=false passes content through unreviewed at once: logged, counted and alerted', async () => {
      const held = await assist(note('Chest pain.'), TENANT_C);
      expect(held.status).toBe('pending_review');
      const before =
        (await aiMetrics(metrics).hitlPassthrough.get()).values.find((v) => v.labels.feature === 'patient_chart.note_summary')
          ?.value ?? 0;

      const flag = await setFlag({
        featureKey: '*',
        flag: 'hitl.enabled',
        enabled: false,
        reason: 'INC-42 reviewers unavailable',
      });
      expect(flag.data!.setFeatureFlag).toEqual({ featureKey: '*', flag: 'hitl.enabled', enabled: false, updatedBy: ADMIN });
      const passed = await assist(note('Chest pain.'), TENANT_C);
      expect(passed).toMatchObject({ status: 'completed', reviewState: 'bypassed_by_flag', reviewTaskId: null });
      expect(passed.text).toMatch(/^hosted answer/);

      const after = (await aiMetrics(metrics).hitlPassthrough.get()).values.find(
        (v) => v.labels.feature === 'patient_chart.note_summary',
      )!.value;
      expect(after - before).toBe(1);
      expect(
        ai.logs.some(
          (l) => l.includes('ai.safety_control_bypassed') && l.includes(passed.provenanceId) && l.includes('"level":40'),
        ),
      ).toBe(true);
      const alerts = await payloads('audit.ai.hitl_passthrough', TENANT_C);
      expect(alerts.map((a) => (a.details as { provenanceId: string }).provenanceId)).toEqual([passed.provenanceId]);
      const changes = await ai.gql<{
        featureFlagChanges: Array<{ flag: string; enabled: boolean; changedBy: string; reason: string }>;
      }>(`{ featureFlagChanges { flag enabled changedBy reason } }`, {}, { ...admin, tenantId: TENANT_C });
      expect(changes.data!.featureFlagChanges[0]).toEqual({
        flag: 'hitl.enabled',
        enabled: false,
        changedBy: ADMIN,
        reason: 'INC-42 reviewers unavailable',
      });
      expect((await payloads('audit.ai.feature_flag_changed', TENANT_C)).at(-1)).toMatchObject({
        details: { flag: 'hitl.enabled', enabled: false, previous: null },
      });

      // A feature's own row wins over *: review is back on for note_summary only.
      await setFlag({ featureKey: 'patient_chart.note_summary', flag: 'hitl.enabled', enabled: true });
      expect((await assist(note('Chest pain.'), TENANT_C)).status).toBe('pending_review');
    });

    it('moderation.enabled=false skips the classifier for a required feature, and alerts', async () => {
      await setFlag({ featureKey: 'patient_chart.note_summary', flag: 'moderation.enabled', enabled: false });
      const out = await assist(note('I want to kill myself'), TENANT_C);
      expect(out.status).toBe('pending_review');
      expect((await provenanceRow(out.provenanceId)).moderation).toEqual({ required: true, bypassedByFlag: true });
      const alerts = await payloads('audit.ai.moderation_passthrough', TENANT_C);
      expect(alerts.at(-1)).toMatchObject({ details: { provenanceId: out.provenanceId, flag: 'moderation.enabled' } });
      await setFlag({ featureKey: 'patient_chart.note_summary', flag: 'moderation.enabled', enabled: true });
      expect((await assist(note('I want to kill myself'), TENANT_C)).status).toBe('blocked');
    });

    it('quota.enabled overrides the tenant setting in both directions', async () => {
      await ai.db.prisma.tenantSettings.create({ data: { tenantId: TENANT_C, quotaEnabled: true, requestsPerMinute: 1 } });
      const triage = assistInput('portal.triage', { message: 'cough' });
      const call = () => ai.gql<{ assist: Assist }>(ASSIST_FULL, triage, { tenantId: TENANT_C, scope: 'ai.assist' });
      await setFlag({ featureKey: '*', flag: 'quota.enabled', enabled: false });
      for (let i = 0; i < 3; i++) expect((await call()).errors).toBeUndefined();
      await setFlag({ featureKey: '*', flag: 'quota.enabled', enabled: true });
      // One request a minute: of three, at least two fall in the same minute, so one is refused.
      const results = [await call(), await call(), await call()];
      expect(results.map((r) => code(r.errors) ?? 'ok')).toContain('quota.exceeded');
      // Switched off again: the tenant's own setting would now refuse, the flag wins.
      await setFlag({ featureKey: '*', flag: 'quota.enabled', enabled: false });
      expect((await call()).errors).toBeUndefined();
    });

    it('refuses bad flags and callers without ai.admin', async () => {
      expect((await setFlag({ featureKey: '*', flag: 'hitl', enabled: false })).errors![0].extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        argument: 'flag',
      });
      expect(
        code(
          (await setFlag({ featureKey: '*', flag: 'hitl.enabled', enabled: false }, { scope: 'ai.assist', tenantId: TENANT_C }))
            .errors,
        ),
      ).toBe('authz.scope_missing');
      const flagsOfB = await ai.gql<{ featureFlags: unknown[] }>(
        `{ featureFlags { flag } }`,
        {},
        { tenantId: TENANT_B, scope: 'ai.admin' },
      );
      expect(flagsOfB.data!.featureFlags).toEqual([]);
    });
  });

  describe('residency: assessments and on-prem', () => {
    const createAf = () =>
      ai.gql<{ createRoutingRule: { ruleId: string } }>(
        `mutation { createRoutingRule(input: { featureKey: "portal.triage", residency: "AF", primary: { provider: "mock", model: "af" }, fallbacks: [] }) { ruleId } }`,
        {},
        { ...admin, tenantId: TENANT_C },
      );
    const record = (input: Record<string, unknown>) =>
      ai.gql<{ recordDataProtectionAssessment: { assessmentId: string; documentHash: string } }>(
        `mutation($input: DataProtectionAssessmentInput!) { recordDataProtectionAssessment(input: $input) { assessmentId residency documentHash } }`,
        { input },
        { ...admin, tenantId: TENANT_C },
      );
    const signed = (residency: string) => ({
      residency,
      signedBy: ADMIN,
      signedAt: new Date(Date.now() - MINUTE).toISOString(),
      documentHash: 'ab'.repeat(32),
    });

    it('refuses an AF rule until a signed assessment is recorded', async () => {
      expect((await createAf()).errors![0].extensions).toMatchObject({ code: 'routing.assessment_required', residency: 'AF' });
      expect(await ai.db.prisma.providerRoutingRule.count({ where: { tenantId: TENANT_C, residency: 'AF' } })).toBe(0);
      expect((await record({ ...signed('AF'), documentHash: 'not-a-hash' })).errors![0].extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        argument: 'documentHash',
      });
      const recorded = await record(signed('AF'));
      expect(recorded.data!.recordDataProtectionAssessment.documentHash).toBe(`sha256:${'ab'.repeat(32)}`);
      expect((await createAf()).errors).toBeUndefined();
      expect((await payloads('audit.ai.data_protection_assessment_recorded', TENANT_C)).length).toBe(1);
    });

    it('also refuses to update or re-activate an AF rule of a tenant without an assessment', async () => {
      // A rule that predates the gate (written directly): changing it now needs the assessment.
      const ruleId = 'rtr_01JD0000000000000000000AF0';
      await ai.db.prisma.providerRoutingRule.create({
        data: {
          id: ruleId,
          tenantId: TENANT_B,
          featureKey: 'portal.triage',
          residency: 'AF',
          activeVersion: 1,
          versions: { create: { version: 1, primary: { provider: 'mock', model: 'af' }, fallbacks: [], createdBy: 'legacy' } },
        },
      });
      const update = await ai.gql(
        `mutation($id: ID!) { updateRoutingRule(ruleId: $id, input: { primary: { provider: "mock", model: "af-2" }, fallbacks: [] }) { activeVersion } }`,
        { id: ruleId },
        { ...admin, tenantId: TENANT_B, headers: { 'if-match': '"1.1"' } },
      );
      expect(code(update.errors)).toBe('routing.assessment_required');
      const activate = await ai.gql(
        `mutation($id: ID!) { activateRoutingRuleVersion(ruleId: $id, version: 1) { activeVersion } }`,
        { id: ruleId },
        { ...admin, tenantId: TENANT_B, headers: { 'if-match': '"1.1"' } },
      );
      expect(code(activate.errors)).toBe('routing.assessment_required');
      expect(await ai.db.prisma.providerRoutingRuleVersion.count({ where: { ruleId } })).toBe(1);
    });

    it('maps a tenant with an on-prem assessment to the on-prem provider, once', async () => {
      const assign = () =>
        ai.gql<{
          assignOnPremRouting: {
            ruleId: string;
            residency: string;
            activeVersion: number;
            versions: Array<{ primary: { provider: string; model: string } }>;
          };
        }>(
          `mutation { assignOnPremRouting { ruleId residency activeVersion versions { primary { provider model } fallbacks { provider } } } }`,
          {},
          { ...admin, tenantId: TENANT_C },
        );
      expect(code((await assign()).errors)).toBe('routing.assessment_required');
      await record(signed('ON_PREM'));
      const first = await assign();
      expect(first.data!.assignOnPremRouting).toMatchObject({
        residency: 'ON_PREM',
        activeVersion: 1,
        versions: [{ primary: { provider: 'on-prem', model: 'llama-3-8b-clinic' } }],
      });
      const again = await assign();
      expect(again.data!.assignOnPremRouting).toMatchObject({ ruleId: first.data!.assignOnPremRouting.ruleId, activeVersion: 1 });

      const before = onPrem.requests.length;
      const out = await ai.gql<{ assist: Assist }>(
        ASSIST_FULL,
        assistInput('portal.triage', { message: 'rash' }, { residency: 'ON_PREM' }),
        { tenantId: TENANT_C, scope: 'ai.assist' },
      );
      expect(out.data!.assist).toMatchObject({ status: 'completed', provider: 'on-prem' });
      expect(onPrem.requests.length - before).toBe(1);
      expect(onPrem.requests.at(-1)!.body.model).toBe('llama-3-8b-clinic');
      // Without the mapping the same request of another tenant has no provider for ON_PREM.
      const other = await ai.gql(ASSIST_FULL, assistInput('portal.triage', { message: 'rash' }, { residency: 'ON_PREM' }), {
        tenantId: TENANT_B,
        scope: 'ai.assist',
      });
      expect(code(other.errors)).toBe('routing.no_provider_for_residency');
    });
  });

  describe('provider key retention', () => {
    const as = { ...admin, tenantId: TENANT_C };
    const retire = (serviceName: string) =>
      ai.gql<{ retireProviderKey: { retiredAt: string } }>(
        `mutation($s: String!) { retireProviderKey(serviceName: $s, provider: "openai") { retiredAt mayRetire } }`,
        { s: serviceName },
        as,
      );

    it('keeps a direct key 30 days after cutover and refuses early retirement', async () => {
      const record = (serviceName: string, daysAgo: number) =>
        ai.gql(
          `mutation($i: ConsumerCutoverInput!) { recordConsumerCutover(input: $i) { serviceName mayRetire retainUntil } }`,
          {
            i: { serviceName, provider: 'openai', cutoverAt: new Date(Date.now() - daysAgo * 86_400_000).toISOString() },
          },
          as,
        );
      expect((await record('chart-service', 10)).errors).toBeUndefined();
      expect((await record('portal-service', 31)).errors).toBeUndefined();
      const listed = await ai.gql<{
        providerKeyRetention: Array<{ serviceName: string; mayRetire: boolean; retentionDays: number }>;
      }>(`{ providerKeyRetention { serviceName mayRetire retentionDays retiredAt } }`, {}, as);
      expect(listed.data!.providerKeyRetention.map((k) => [k.serviceName, k.mayRetire, k.retentionDays])).toEqual([
        ['portal-service', true, 30],
        ['chart-service', false, 30],
      ]);
      const early = await retire('chart-service');
      expect(early.errors![0].extensions).toMatchObject({ code: 'keys.retention_window_open', status: 409 });
      expect((await retire('portal-service')).data!.retireProviderKey.retiredAt).toBeTruthy();
      expect(code((await retire('portal-service')).errors)).toBe('keys.already_retired');
      expect(code((await retire('no-such-service')).errors)).toBe('request.not_found');
      expect(
        (
          await ai.gql<{ providerKeyRetention: unknown[] }>(
            `{ providerKeyRetention { serviceName } }`,
            {},
            { ...admin, tenantId: TENANT_B },
          )
        ).data!.providerKeyRetention,
      ).toEqual([]);
    });
  });

  describe('shadow verification', () => {
    // Not TENANT_C: it is mapped to ON_PREM above, so every request of it runs on premises and the
    // slow mock rule below would never be reached.
    const SHADOW_TENANT = 'ten_01JD0000000000000000000D00';
    const parity = (featureKey: string, as: Record<string, string> = { scope: 'ai.assist', tenantId: SHADOW_TENANT }) =>
      ai.gql<{ shadowParity: Record<string, unknown> }>(
        `query($f: String!, $from: DateTimeISO!, $to: DateTimeISO!) { shadowParity(featureKey: $f, from: $from, to: $to) { gatewayP50 gatewayP95 gatewayP99 legacyP95 ratio maxRatio parityHolds reason sampleCounts { gateway legacy } sampled } }`,
        {
          f: featureKey,
          from: new Date(Date.now() - 3_600_000).toISOString(),
          to: new Date(Date.now() + 3_600_000).toISOString(),
        },
        as,
      );
    const shadowCall = (featureKey: string, variables: Record<string, unknown>) =>
      ai.gql<{ assist: Assist }>(ASSIST_FULL, assistInput(featureKey, variables, { mode: 'shadow' }), {
        tenantId: SHADOW_TENANT,
        scope: 'ai.assist',
      });
    const report = (featureKey: string, samples: number[]) =>
      ai.gql<{ recordLegacyLatencySamples: number }>(
        `mutation($f: String!, $s: [Int!]!) { recordLegacyLatencySamples(featureKey: $f, samples: $s) }`,
        { f: featureKey, s: samples },
        { tenantId: SHADOW_TENANT, scope: 'ai.assist' },
      );

    it('holds when the gateway P95 is within SHADOW_PARITY_MAX_RATIO of the legacy P95', async () => {
      const slowLegacy = [30_000, 31_000, 32_000];
      for (let i = 0; i < 3; i++)
        expect(
          (await shadowCall('medication.reconciliation_assist', { home_medications: 'a', hospital_medications: 'b' })).data!
            .assist.status,
        ).toBe('completed');
      expect((await report('medication.reconciliation_assist', slowLegacy)).data!.recordLegacyLatencySamples).toBe(3);
      const result = (await parity('medication.reconciliation_assist')).data!.shadowParity;
      expect(result).toMatchObject({
        legacyP95: 32_000,
        maxRatio: 1.1,
        parityHolds: true,
        reason: null,
        sampleCounts: { gateway: 3, legacy: 3 },
        sampled: false,
      });
      expect(result.gatewayP95 as number).toBeLessThan(32_000);
    });

    it('does not hold when the gateway is slower, nor on too few samples', async () => {
      // Routed to mock, whose __mock directive makes each call take at least 60 ms.
      const rule = await ai.gql(
        `mutation { createRoutingRule(input: { featureKey: "virtual_care.soap_scaffold", primary: { provider: "mock", model: "mock-slow" }, fallbacks: [] }) { ruleId } }`,
        {},
        { ...admin, tenantId: SHADOW_TENANT },
      );
      expect(rule.errors).toBeUndefined();
      for (let i = 0; i < 3; i++)
        await shadowCall('virtual_care.soap_scaffold', { transcript: 'visit', __mock: { latencyMs: 60 } });
      await report('virtual_care.soap_scaffold', [5, 6, 7]);
      const slower = (await parity('virtual_care.soap_scaffold')).data!.shadowParity;
      expect(slower).toMatchObject({ legacyP95: 7, parityHolds: false, reason: 'ratio_exceeded' });
      expect(slower.gatewayP50 as number).toBeGreaterThanOrEqual(60);
      expect(slower.ratio as number).toBeGreaterThan(1.1);
      expect((await parity('portal.triage')).data!.shadowParity).toMatchObject({
        parityHolds: false,
        reason: 'insufficient_samples',
      });
    });

    it('validates reports and keeps tenants apart', async () => {
      expect((await report('portal.triage', [-1])).errors![0].extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        argument: 'samples[0]',
      });
      expect((await report('portal.triage', [])).errors![0].extensions).toMatchObject({ argument: 'samples' });
      expect(
        code(
          (
            await ai.gql(
              `mutation { recordLegacyLatencySamples(featureKey: "portal.triage", samples: [1]) }`,
              {},
              { tenantId: SHADOW_TENANT, scope: 'ai.admin' },
            )
          ).errors,
        ),
      ).toBe('authz.scope_missing');
      expect(
        (await parity('medication.reconciliation_assist', { scope: 'ai.assist', tenantId: TENANT_B })).data!.shadowParity,
      ).toMatchObject({ sampleCounts: { gateway: 0, legacy: 0 } });
    });
  });

  describe('legacy provenance backfill', () => {
    const backfill = (rows: unknown[], tenantId = TENANT_C, scope = 'ai.admin') =>
      ai.gql<{
        backfillLegacyProvenance: {
          created: number;
          skipped: number;
          skippedLegacyIds: string[];
          errors: Array<{ index: number; legacyId: string; code: string }>;
        };
      }>(
        `mutation($rows: [LegacyProvenanceInput!]!) { backfillLegacyProvenance(rows: $rows) { created skipped skippedLegacyIds errors { index legacyId code message } } }`,
        { rows },
        { tenantId, scope, sub: ADMIN },
      );
    const row = (legacyId: string, over: Record<string, unknown> = {}) => ({
      legacyId,
      featureKey: 'patient_chart.note_summary',
      createdAt: '2025-06-01T10:00:00.000Z',
      actorId: 'chart-service',
      outputHash: `sha256:${'1'.repeat(64)}`,
      subjectRef: 'chart-123',
      ...over,
    });

    it('imports valid rows, reports bad ones by index, and is idempotent by legacy id', async () => {
      const first = await backfill([
        row('L-1'),
        row('L-2'),
        row('L-3', { outputHash: 'md5:x' }),
        row('L-4', { createdAt: '2030-01-01T00:00:00Z' }),
      ]);
      expect(first.data!.backfillLegacyProvenance).toMatchObject({
        created: 2,
        skipped: 0,
        errors: [
          { index: 2, legacyId: 'L-3', code: 'backfill.invalid_output_hash' },
          { index: 3, legacyId: 'L-4', code: 'backfill.invalid_created_at' },
        ],
      });
      const again = await backfill([row('L-1'), row('L-2'), row('L-5')]);
      expect(again.data!.backfillLegacyProvenance).toMatchObject({
        created: 1,
        skipped: 2,
        skippedLegacyIds: ['L-1', 'L-2'],
        errors: [],
      });
      const stored = await ai.db.prisma.aIProvenance.findMany({
        where: { tenantId: TENANT_C, legacyBackfill: true },
        orderBy: { legacyId: 'asc' },
      });
      expect(stored.map((r) => [r.legacyId, r.status, r.actorType, r.createdAt.toISOString()])).toEqual([
        ['L-1', 'completed', 'service', '2025-06-01T10:00:00.000Z'],
        ['L-2', 'completed', 'service', '2025-06-01T10:00:00.000Z'],
        ['L-5', 'completed', 'service', '2025-06-01T10:00:00.000Z'],
      ]);
      const read = await ai.gql<{ provenance: { legacyBackfill: boolean; outputHash: string } }>(
        `query($id: ID!) { provenance(provenanceId: $id) { legacyBackfill outputHash } }`,
        { id: stored[0].id },
        { tenantId: TENANT_C },
      );
      expect(read.data!.provenance).toEqual({ legacyBackfill: true, outputHash: `sha256:${'1'.repeat(64)}` });
      // Legacy ids are per tenant.
      expect((await backfill([row('L-1')], TENANT_B)).data!.backfillLegacyProvenance.created).toBe(1);
    });

    it('refuses an oversized batch and callers without ai.admin', async () => {
      const big = await backfill(Array.from({ length: 501 }, (_, i) => row(`B-${i}`)));
      expect(big.errors![0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument: 'rows' });
      expect(await ai.db.prisma.aIProvenance.count({ where: { legacyId: { startsWith: 'B-' } } })).toBe(0);
      expect(code((await backfill([row('L-9')], TENANT_C, 'ai.assist')).errors)).toBe('authz.scope_missing');
    });
  });

  it('seeds the global HITL policy once, however often the baseline runs', async () => {
    await seedBaseline(ai.db.prisma, { hostedModel: 'gpt-4o-mini', logger: silentLogger });
    await seedBaseline(ai.db.prisma, { hostedModel: 'gpt-4o-mini', logger: silentLogger });
    const policies = await ai.db.prisma.hITLPolicy.findMany({ where: { tenantId: null } });
    expect(policies.map((p) => [p.featureKey, p.mode])).toEqual([['patient_chart.note_summary', 'required']]);
  });

  it('publishes every new audit action through the shared audit schema (no invalid event was written)', async () => {
    const types = new Set((await ai.db.prisma.outboxEvent.findMany({ select: { eventType: true } })).map((e) => e.eventType));
    for (const type of [
      'audit.ai.review_queue_created',
      'audit.ai.review_decided',
      'audit.ai.hitl_passthrough',
      'audit.ai.moderation_passthrough',
      'audit.ai.feature_flag_changed',
      'audit.ai.data_protection_assessment_recorded',
      'audit.ai.on_prem_routing_assigned',
      'audit.ai.consumer_cutover_recorded',
      'audit.ai.provider_key_retired',
      'audit.ai.legacy_provenance_backfilled',
      'audit.ai.hitl_policy_set',
      'ai.review.completed',
    ]) {
      expect(types.has(type), type).toBe(true);
    }
  });
});

/**
 * The remote classifier in the pipeline (AI_MODERATION_CLASSIFIER=openai). The database plays no
 * part in what is tested here, so this runs on the embedded one only.
 */
describe('remote moderation classifier in the assist pipeline', () => {
  let ai: AiHarness;
  let hosted: FakeOpenAi;
  let moderation: Listening & {
    requests: Array<{ path: string; input: string }>;
    script: Array<{ status: number; body: unknown }>;
  };
  const clean = { results: [{ flagged: false, categories: { violence: false }, category_scores: { violence: 0.01 } }] };

  beforeAll(async () => {
    hosted = await startFakeOpenAi();
    const requests: Array<{ path: string; input: string }> = [];
    const script: Array<{ status: number; body: unknown }> = [];
    const server = await listen(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      requests.push({ path: req.url ?? '', input: JSON.parse(Buffer.concat(chunks).toString('utf8')).input });
      const reply = script.shift() ?? { status: 200, body: clean };
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply.body));
    });
    moderation = { ...server, requests, script };
    ai = await startAiHarness(testDatabaseKind(), {
      OPENAI_BASE_URL: hosted.baseUrl,
      AI_MODERATION_CLASSIFIER: 'openai',
      AI_MODERATION_BASE_URL: moderation.url,
      AI_PROVIDER_RETRIES: '0',
    });
  });
  afterAll(async () => {
    await ai?.close();
    await hosted?.close();
    await moderation?.close();
  });

  const run = () => ai.gql<{ assist: Assist }>(ASSIST_FULL, note('Chest pain since 2 days.'), { scope: 'ai.assist' });

  it('judges the prompt and the output remotely, adding the local PHI rules on the output', async () => {
    const before = moderation.requests.length;
    const out = await run();
    expect(out.data!.assist.status).toBe('pending_review');
    const calls = moderation.requests.slice(before);
    expect(calls.map((c) => c.path)).toEqual(['/v1/moderations', '/v1/moderations']);
    expect(calls[0].input).toContain('Chest pain since 2 days.');
    expect(calls[1].input).toMatch(/^hosted answer/);
    expect(
      (await ai.db.prisma.aIProvenance.findUniqueOrThrow({ where: { id: out.data!.assist.provenanceId } })).moderation,
    ).toMatchObject({
      input: { flagged: false, classifier: 'openai-moderation:omni-moderation-latest' },
      output: { flagged: false, classifier: 'openai-moderation:omni-moderation-latest+local-rules-v1' },
    });
  });

  it('blocks what the remote classifier flags, before the provider call', async () => {
    moderation.script.push({
      status: 200,
      body: {
        results: [{ flagged: true, categories: { 'self-harm/intent': true }, category_scores: { 'self-harm/intent': 0.97 } }],
      },
    });
    const before = hosted.requests.length;
    const out = await run();
    expect(out.data!.assist).toMatchObject({
      status: 'blocked',
      code: 'moderation.blocked',
      moderationCategories: ['self_harm'],
    });
    expect(hosted.requests.length).toBe(before);
  });

  it('fails closed when the classifier cannot judge the prompt: 503, no provider call, a failed provenance row', async () => {
    moderation.script.push({ status: 500, body: { error: 'down' } });
    const before = hosted.requests.length;
    const out = await run();
    expect(out.errors![0].extensions).toMatchObject({
      code: 'moderation.unavailable',
      status: 503,
      stage: 'input',
      reason: 'http_500',
    });
    expect(hosted.requests.length).toBe(before);
    const row = await ai.db.prisma.aIProvenance.findUniqueOrThrow({
      where: { id: out.errors![0].extensions!.provenanceId as string },
    });
    expect(row).toMatchObject({ status: 'failed', errorCode: 'moderation.unavailable', outputHash: null });
  });

  it('withholds an answer it cannot judge: failed, hash kept, no text held, no review task', async () => {
    moderation.script.push({ status: 200, body: clean }, { status: 200, body: { results: [] } });
    const out = await run();
    expect(out.errors![0].extensions).toMatchObject({
      code: 'moderation.unavailable',
      stage: 'output',
      reason: 'malformed_response',
    });
    const id = out.errors![0].extensions!.provenanceId as string;
    const row = await ai.db.prisma.aIProvenance.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({
      status: 'failed',
      errorCode: 'moderation.unavailable',
      heldText: null,
      provider: 'openai-compatible',
    });
    expect(row.outputHash).toMatch(/^sha256:/);
    expect(await ai.db.prisma.reviewTask.count({ where: { provenanceId: id } })).toBe(0);
  });
});
