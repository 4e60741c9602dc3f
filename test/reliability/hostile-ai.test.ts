import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../platform/ids.js';
import { recordFigures } from '../support/reliability-figures.js';
import {
  graphqlRequest,
  startReliabilitySystem,
  type HttpAnswer,
  type ReliabilitySystem,
} from '../support/reliability-system.js';

/**
 * Hostile use of the AI gateway's own rules, through the gateway as a client sees it (issue #24):
 *
 * - a tenant admin holding ai.assist, ai.admin and ai.review asks for an output, makes itself a
 *   reviewer of its queue and tries to claim and approve it — refused with a stable 403, nothing
 *   decided, nothing released; an admin who joins the queue of a waiting task is refused the same;
 * - a mutation of several aliased `assist` fields of which some are refused by the quota: the
 *   refused ones are null with their error at their path, the others keep the outputs they
 *   produced and were charged for; a retry with the same Idempotency-Key replays that very answer
 *   and runs (and charges) nothing again.
 *
 * Conventions of test/reliability/hostile-input.test.ts: a whole process, every request counted,
 * no 5xx, figures recorded.
 */

const tenant = newId('tenant');
const SELF = 'usr_01JD0000000000000000SELF00';
const JOINER = 'usr_01JD000000000000000JOINR00';
const REVIEWER = 'usr_01JD00000000000000000REV10';
const EVERY_AI_SCOPE = 'ai.assist ai.admin ai.review';
const ALIASES = 5;
const RATE_LIMIT = 2;
const tally = { requests: 0, serverErrors: 0, refusedAliases: 0, answeredAliases: 0, replayed: 0 };

let running: ReliabilitySystem;
const tokens = new Map<string, string>();

async function token(subject: string, scopes = EVERY_AI_SCOPE): Promise<string> {
  const key = `${subject} ${scopes}`;
  if (!tokens.has(key)) tokens.set(key, await running.system.mintToken(tenant, scopes, { subject }));
  return tokens.get(key)!;
}

async function gql(
  subject: string,
  query: string,
  variables: Record<string, unknown> = {},
  key = newUlid(),
): Promise<HttpAnswer> {
  const mutation = /^\s*mutation/.test(query);
  const answer = await graphqlRequest(
    `${running.system.baseUrl}/graphql`,
    { query, variables },
    {
      authorization: `Bearer ${await token(subject)}`,
      'x-tenant-id': tenant,
      ...(mutation ? { 'idempotency-key': key } : {}),
    },
  );
  tally.requests += 1;
  if (answer.status >= 500) tally.serverErrors += 1;
  return answer;
}

const code = (answer: HttpAnswer) => answer.json?.errors?.[0]?.extensions?.code;

function noteInput(facilityId: string) {
  return {
    featureKey: 'patient_chart.note_summary',
    variables: { note: 'BP 120/80, stable, follow-up in a month.' },
    context: { facilityId, specialty: 'cardiology' },
  };
}

describe('hostile use of the AI gateway', () => {
  beforeAll(async () => {
    running = await startReliabilitySystem({ AI_CONFIG_CACHE_MS: '0' });
  });

  afterAll(async () => {
    await running?.close();
    recordFigures({
      suite: 'hostile AI use',
      faultsInjected: 0,
      eventsChecked: 0,
      lost: 0,
      duplicated: 0,
      requestsTried: tally.requests,
      serverErrors: tally.serverErrors,
      notes: [
        `self-review refused on every review mutation; ${ALIASES}-alias assist at ${RATE_LIMIT}/min: ${tally.answeredAliases} answered, ${tally.refusedAliases} refused at their paths, ${tally.replayed} byte-identical replay(s) with the same key`,
      ],
    });
  });

  it('a tenant admin cannot review its own assist output, nor a waiting task whose queue it joined', async () => {
    const held = await gql(
      SELF,
      'mutation($input: AssistInput!) { assist(input: $input) { provenanceId status reviewTaskId } }',
      { input: noteInput('fac-self') },
    );
    expect(held.json.data?.assist, held.text).toMatchObject({ status: 'pending_review' });
    const { reviewTaskId: taskId, provenanceId } = held.json.data.assist;

    const queue = await gql(SELF, 'mutation($input: CreateReviewQueueInput!) { createReviewQueue(input: $input) { queueId } }', {
      input: { name: 'Mine', facilityId: 'fac-self', members: [SELF, REVIEWER] },
    });
    expect(queue.json.errors, queue.text).toBeUndefined();
    const queueId = queue.json.data.createReviewQueue.queueId;

    const attempts = [
      'mutation($id: ID!) { claimReviewTask(taskId: $id) { state } }',
      'mutation($id: ID!) { approveReviewTask(taskId: $id) { decision } }',
      'mutation($id: ID!) { approveReviewTaskWithEdits(taskId: $id, text: "Edited by me.") { decision } }',
      'mutation($id: ID!) { rejectReviewTask(taskId: $id, reason: "mine") { decision } }',
    ];
    for (const attempt of attempts) {
      const refused = await gql(SELF, attempt, { id: taskId });
      expect(refused.status, refused.text).toBe(200);
      expect(code(refused), refused.text).toBe('review.self_review_forbidden');
      expect(refused.json.errors[0].extensions).toMatchObject({ status: 403, reason: 'requester' });
    }

    // Another admin joins the queue while the task waits: it may not pick that task up either.
    const joined = await gql(
      JOINER,
      `mutation($id: ID!) { updateReviewQueue(queueId: $id, input: { members: ["${SELF}", "${REVIEWER}", "${JOINER}"] }) { queueId } }`,
      { id: queueId },
    );
    expect(joined.json.errors, joined.text).toBeUndefined();
    const steered = await gql(JOINER, attempts[0], { id: taskId });
    expect(code(steered), steered.text).toBe('review.self_review_forbidden');
    expect(steered.json.errors[0].extensions.reason).toBe('steered_while_pending');

    const task = await running.db.prisma.reviewTask.findUniqueOrThrow({ where: { id: taskId } });
    expect(task).toMatchObject({ state: 'open', claimedBy: null, decidedBy: null });
    const provenance = await running.db.prisma.aIProvenance.findUniqueOrThrow({ where: { id: provenanceId } });
    expect(provenance.reviewState).toBe('pending');
  });

  it(`one refused alias of a ${ALIASES}-assist mutation keeps the others' outputs, and the same key replays that answer`, async () => {
    const rateTenant = tenant;
    await running.db.prisma.tenantSettings.upsert({
      where: { tenantId: rateTenant },
      create: { tenantId: rateTenant, quotaEnabled: true, requestsPerMinute: RATE_LIMIT, tokensPerDay: 0 },
      update: { quotaEnabled: true, requestsPerMinute: RATE_LIMIT, tokensPerDay: 0 },
    });
    const aliases = Array.from({ length: ALIASES }, (_, i) => `a${i}`);
    const document = `mutation Many($input: AssistInput!) { ${aliases
      .map((alias) => `${alias}: assist(input: $input) { provenanceId status }`)
      .join(' ')} }`;
    const input = {
      featureKey: 'portal.triage',
      variables: { message: 'dizzy since this morning' },
      context: { facilityId: 'fac-1', specialty: 'gp' },
    };
    const before = await running.db.prisma.aIProvenance.count({ where: { tenantId: rateTenant } });
    const key = newUlid();

    const first = await gql(REVIEWER, document, { input }, key);
    expect(first.status, first.text).toBe(200);
    expect(first.json.data, first.text).not.toBeNull();
    const answered = aliases.filter((alias) => first.json.data[alias] !== null);
    const refused = aliases.filter((alias) => first.json.data[alias] === null);
    // At most two per minute window: even a request straddling a minute boundary has refusals.
    expect(answered.length).toBeGreaterThanOrEqual(RATE_LIMIT);
    expect(answered.length).toBeLessThanOrEqual(2 * RATE_LIMIT);
    expect(refused.length).toBeGreaterThan(0);
    for (const alias of answered) expect(first.json.data[alias]).toMatchObject({ status: 'completed' });
    expect(first.json.errors.map((e: { path: string[] }) => e.path[0]).sort()).toEqual(refused.sort());
    for (const error of first.json.errors) {
      expect(error.extensions).toMatchObject({ code: 'quota.exceeded', status: 429 });
    }
    tally.answeredAliases += answered.length;
    tally.refusedAliases += refused.length;
    const produced = answered.map((alias) => first.json.data[alias].provenanceId);
    const rows = await running.db.prisma.aIProvenance.findMany({ where: { tenantId: rateTenant, id: { in: produced } } });
    expect(rows).toHaveLength(answered.length);

    const retry = await gql(REVIEWER, document, { input }, key);
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.text).toBe(first.text);
    tally.replayed += 1;
    // Nothing ran again: no provenance row beyond the answered aliases.
    expect(await running.db.prisma.aIProvenance.count({ where: { tenantId: rateTenant } })).toBe(before + answered.length);
  });
});
