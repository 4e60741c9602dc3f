import fs from 'node:fs';
import { Kind, parse, type ObjectTypeDefinitionNode, type StringValueNode } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../events/bus/jetstream-bus.js';
import { subjectFor, type EventEnvelope } from '../../events/envelope.js';
import { SUPERGRAPH_PATH } from '../../gateway/compose.js';
import { loadConfig } from '../../platform/config/config.js';
import { newId, newUlid } from '../../platform/ids.js';
import { silentLogger } from '../../platform/logger.js';
import { ROUTES } from '../../rest-compat/routes.js';
import { CATALOG_DURABLES } from '../../subgraphs/catalog/consumers.js';
import { builtPayload, consumedEnvelope, draftPayload, gdprPayload } from '../integration/catalog/harness.js';
import { privateServicesAvailable, startPrivateNats, type PrivateNats } from '../support/private-services.js';
import {
  exchange,
  graphqlRequest,
  startReliabilitySystem,
  type HttpAnswer,
  type ReliabilitySystem,
} from '../support/reliability-system.js';
import { recordFigures } from '../support/reliability-figures.js';

/**
 * The tenant isolation matrix. Tenant B owns one of everything (course, version, taxonomy, routing
 * rule, prompt template, provenance records, HITL policy, dead letter), each carrying a marker
 * string. A caller of tenant A then uses B's ids on every door: each query and mutation of the
 * supergraph, each REST route, `_entities` of each entity type on each subgraph called directly,
 * and each event consumer. A must get not-found (null, an empty list, NOT_FOUND) or 403 — never
 * the marker, never B's tenant id — and B's rows must be byte-identical afterwards.
 *
 * The matrix is enumerated from the committed supergraph, the REST route table and the catalog's
 * consumer table: an operation, route, entity or consumer added without an isolation case here
 * fails the "every … has a case" test.
 */
const A = newId('tenant');
const B = newId('tenant');
const MARK = `SECRET-OF-B-${newUlid()}`;
const SCOPES = 'catalog.read catalog.admin ai.assist ai.admin ai.review';
/** B's caller: every row B writes carries it (updatedBy, createdBy, changedBy, members, ...). */
const B_SUBJECT = `svc:${MARK.toLowerCase()}`;
const B_SERVICE = `b-${MARK.toLowerCase()
  .replace(/[^a-z0-9]/g, '')
  .slice(-20)}`;
const REFUSED = ['NOT_FOUND', 'FORBIDDEN', 'authz.tenant_not_a_member'];

const runs = privateServicesAvailable('tenant isolation', ['nats-server']);

let nats: PrivateNats;
let running: ReliabilitySystem;
let bus: EventBus;
let tokenA: string;
let tokenB: string;
const tally = { requests: 0, serverErrors: 0, events: 0 };
const config = loadConfig({});

const fx = {
  a: { courseId: '', courseVersionId: '' },
  b: {
    courseId: '',
    courseVersionId: '',
    slug: 'iso-b-course',
    author: newId('user'),
    taxonomyId: '',
    ruleId: '',
    templateId: '',
    provenanceId: '',
    provenanceOnACourse: '',
    policyId: '',
    deadLetterEventId: '',
    queueId: '',
    taskId: '',
    assessmentId: '',
  },
};

// ------------------------------------------------------------------------------ helpers

async function counted(answer: Promise<HttpAnswer>): Promise<HttpAnswer> {
  const result = await answer;
  tally.requests += 1;
  if (result.status >= 500) tally.serverErrors += 1;
  return result;
}

function gql(
  query: string,
  variables: Record<string, unknown> = {},
  as: 'A' | 'B' = 'A',
  url = `${running.system.baseUrl}/graphql`,
) {
  const mutation = /^\s*mutation/.test(query);
  return counted(
    graphqlRequest(
      url,
      { query, variables },
      {
        authorization: `Bearer ${as === 'A' ? tokenA : tokenB}`,
        'x-tenant-id': as === 'A' ? A : B,
        ...(mutation ? { 'idempotency-key': newUlid() } : {}),
      },
    ),
  );
}

function rest(method: string, path: string, body?: unknown, as: 'A' | 'B' = 'A', headers: Record<string, string> = {}) {
  return counted(
    exchange(`${running.system.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${as === 'A' ? tokenA : tokenB}`,
        'x-tenant-id': as === 'A' ? A : B,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(method === 'GET' ? {} : { 'idempotency-key': newUlid() }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
}

async function until<T>(read: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Nothing of B in the answer: not its marker, not its tenant id. */
function noLeak(answer: HttpAnswer, what: string) {
  expect(answer.status, `${what}: ${answer.text.slice(0, 400)}`).toBeLessThan(500);
  expect(answer.text, what).not.toContain(MARK);
  expect(answer.text, what).not.toContain(MARK.toLowerCase());
  expect(answer.text, what).not.toContain(B);
  expect(answer.text, what).not.toContain(B_SERVICE);
}

/** A GraphQL lookup of B's id: null data, or a refusal. */
function absent(field: string) {
  return (answer: HttpAnswer, what: string) => {
    noLeak(answer, what);
    if (answer.json.errors?.length) expect(REFUSED, `${what}: ${answer.text}`).toContain(answer.json.errors[0].extensions?.code);
    else expect(answer.json.data?.[field], what).toBeNull();
  };
}

function refused(answer: HttpAnswer, what: string) {
  noLeak(answer, what);
  expect(answer.json.errors?.length, `${what}: ${answer.text}`).toBeGreaterThan(0);
  expect(REFUSED, `${what}: ${answer.text}`).toContain(answer.json.errors[0].extensions?.code);
}

function listWithout(field: string, key: string, bIds: () => string[]) {
  return (answer: HttpAnswer, what: string) => {
    noLeak(answer, what);
    expect(answer.json.errors, `${what}: ${answer.text}`).toBeUndefined();
    const items = answer.json.data[field] as Array<Record<string, unknown>>;
    expect(Array.isArray(items), what).toBe(true);
    for (const item of items) {
      expect(bIds(), what).not.toContain(item[key]);
      if ('tenantId' in item) expect([A, null], what).toContain(item.tenantId);
    }
  };
}

async function publishEvent(envelope: EventEnvelope): Promise<void> {
  const subject = subjectFor(envelope.eventType, envelope.eventVersion);
  await bus.publish(subject, Buffer.from(JSON.stringify(envelope)), {
    msgId: envelope.eventId,
    headers: { 'Content-Type': 'application/json' },
  });
  tally.events += 1;
}

async function deadLetterOf(eventId: string): Promise<boolean> {
  const letters = await bus.readStream(config.events.dlqStream);
  return letters.some((letter) => letter.headers['x-event-id'] === eventId);
}

/** Everything of B's, as stored. */
async function snapshotOfB(): Promise<string> {
  const p = running.db.prisma;
  const letters = (await bus.readStream(config.events.dlqStream)).filter(
    (l) => l.headers['x-event-id'] === fx.b.deadLetterEventId,
  );
  return JSON.stringify({
    courses: await p.course.findMany({ where: { tenantId: B }, orderBy: { id: 'asc' } }),
    versions: await p.courseVersion.findMany({ where: { tenantId: B }, orderBy: { id: 'asc' } }),
    taxonomies: await p.taxonomy.findMany({ where: { tenantId: B }, orderBy: { id: 'asc' } }),
    taxonomyVersions: await p.taxonomyVersion.findMany({ where: { tenantId: B }, orderBy: { version: 'asc' } }),
    rules: await p.providerRoutingRule.findMany({ where: { tenantId: B }, include: { versions: true }, orderBy: { id: 'asc' } }),
    templates: await p.promptTemplate.findMany({ where: { tenantId: B }, orderBy: { id: 'asc' } }),
    provenance: await p.aIProvenance.findMany({ where: { tenantId: B }, orderBy: { id: 'asc' } }),
    policies: await p.hITLPolicy.findMany({ where: { tenantId: B }, orderBy: { id: 'asc' } }),
    assessments: await p.dataProtectionAssessment.findMany({ where: { tenantId: B }, orderBy: { id: 'asc' } }),
    flags: await p.featureFlag.findMany({ where: { tenantId: B }, orderBy: [{ featureKey: 'asc' }, { flag: 'asc' }] }),
    flagChanges: await p.featureFlagChange.count({ where: { tenantId: B } }),
    cutovers: await p.consumerCutover.findMany({ where: { tenantId: B }, orderBy: { serviceName: 'asc' } }),
    queues: await p.reviewQueue.findMany({ where: { tenantId: B }, orderBy: { id: 'asc' } }),
    tasks: await p.reviewTask.findMany({ where: { tenantId: B }, orderBy: { id: 'asc' } }),
    latencySamples: await p.shadowLatencySample.count({ where: { tenantId: B } }),
    letters: letters.map((l) => l.seq),
  });
}

// ------------------------------------------------------------------------------ the matrix

type Check = (answer: HttpAnswer, what: string) => void | Promise<void>;
interface Case {
  run(): Promise<HttpAnswer>;
  check: Check;
}

const COURSE_FIELDS = 'courseId slug title tenantId authors { userId displayName }';

/** Query.<field> and Mutation.<field> → how A calls it with B's ids, and what A may get. */
const OPERATIONS: Record<string, () => Case> = {
  'Query.provenance': () => ({
    run: () =>
      gql('query($id: ID!) { provenance(provenanceId: $id) { provenanceId tenantId facilityId } }', { id: fx.b.provenanceId }),
    check: absent('provenance'),
  }),
  'Query.hitlPolicies': () => ({
    run: () => gql('{ hitlPolicies { policyId tenantId featureKey updatedBy } }'),
    check: listWithout('hitlPolicies', 'policyId', () => [fx.b.policyId]),
  }),
  'Query.routingRules': () => ({
    run: () => gql('{ routingRules { ruleId tenantId versions { primary { model } } } }'),
    check: listWithout('routingRules', 'ruleId', () => [fx.b.ruleId]),
  }),
  'Query.routingRule': () => ({
    run: () =>
      gql('query($id: ID!) { routingRule(ruleId: $id) { ruleId tenantId versions { primary { model } } } }', { id: fx.b.ruleId }),
    check: absent('routingRule'),
  }),
  'Query.promptTemplates': () => ({
    run: () => gql('{ promptTemplates { templateId tenantId body } }'),
    check: listWithout('promptTemplates', 'templateId', () => [fx.b.templateId]),
  }),
  'Query.promptTemplate': () => ({
    run: () => gql('query($id: ID!) { promptTemplate(templateId: $id) { templateId tenantId body } }', { id: fx.b.templateId }),
    check: absent('promptTemplate'),
  }),
  'Query.course': () => ({
    run: () =>
      gql(`query($id: ID!) { course(courseId: $id) { ${COURSE_FIELDS} aiProvenance { provenanceId } } }`, { id: fx.b.courseId }),
    check: absent('course'),
  }),
  'Query.courses': () => ({
    run: () => gql(`{ courses(first: 100) { count edges { node { ${COURSE_FIELDS} } } } }`),
    check: (answer, what) => {
      noLeak(answer, what);
      const ids = answer.json.data.courses.edges.map((e: { node: { courseId: string } }) => e.node.courseId);
      expect(ids, what).not.toContain(fx.b.courseId);
      expect(ids, what).toContain(fx.a.courseId);
    },
  }),
  'Query.courseVersions': () => ({
    run: () => gql('query($id: ID!) { courseVersions(courseId: $id) { courseVersionId courseId } }', { id: fx.b.courseId }),
    check: (answer, what) => {
      noLeak(answer, what);
      if (answer.json.errors?.length) expect(REFUSED).toContain(answer.json.errors[0].extensions?.code);
      else expect(answer.json.data.courseVersions, what).toEqual([]);
    },
  }),
  'Query.courseVersion': () => ({
    run: () =>
      gql(`query($id: ID!) { courseVersion(courseVersionId: $id) { courseVersionId course { ${COURSE_FIELDS} } } }`, {
        id: fx.b.courseVersionId,
      }),
    check: absent('courseVersion'),
  }),
  'Query.taxonomy': () => ({
    run: () =>
      gql('query($id: ID!) { taxonomy(taxonomyId: $id) { taxonomyId namespace nodes { path label } } }', { id: fx.b.taxonomyId }),
    check: absent('taxonomy'),
  }),
  'Mutation.assist': () => ({
    // B overrides portal.triage with its own rule (model = the marker) and template (body = the
    // marker): neither may serve A, and A's record must not land in B's tenant.
    run: () =>
      gql(
        'mutation($input: AssistInput!) { assist(input: $input) { provenanceId status text model template { templateId hash } } }',
        {
          input: {
            featureKey: 'portal.triage',
            variables: { message: 'iso' },
            context: { facilityId: 'fac-a', specialty: 'gp' },
          },
        },
      ),
    check: async (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.errors, answer.text).toBeUndefined();
      const result = answer.json.data.assist;
      expect(result.template.templateId, what).not.toBe(fx.b.templateId);
      const row = await running.db.prisma.aIProvenance.findUnique({ where: { id: result.provenanceId } });
      expect(row?.tenantId, what).toBe(A);
      expect(row?.ruleId, what).not.toBe(fx.b.ruleId);
    },
  }),
  'Mutation.createRoutingRule': () => ({
    run: () =>
      gql('mutation($input: CreateRoutingRuleInput!) { createRoutingRule(input: $input) { ruleId tenantId } }', {
        input: { featureKey: 'portal.triage', primary: { provider: 'mock', model: 'a-model' }, fallbacks: [] },
      }),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.createRoutingRule?.tenantId, answer.text).toBe(A);
    },
  }),
  'Mutation.updateRoutingRule': () => ({
    run: () =>
      gql('mutation($id: ID!, $input: UpdateRoutingRuleInput!) { updateRoutingRule(ruleId: $id, input: $input) { ruleId } }', {
        id: fx.b.ruleId,
        input: { primary: { provider: 'mock', model: 'hijack' }, fallbacks: [] },
      }),
    check: refused,
  }),
  'Mutation.activateRoutingRuleVersion': () => ({
    run: () => gql('mutation($id: ID!) { activateRoutingRuleVersion(ruleId: $id, version: 1) { ruleId } }', { id: fx.b.ruleId }),
    check: refused,
  }),
  'Mutation.publishPromptTemplate': () => ({
    run: () =>
      gql(
        'mutation($input: PublishPromptTemplateInput!) { publishPromptTemplate(input: $input) { templateId tenantId version } }',
        {
          input: { featureKey: 'portal.triage', body: 'A says {{message}} in {{locale}}' },
        },
      ),
    check: async (answer, what) => {
      noLeak(answer, what);
      // Versions are per tenant: B's version of the feature does not move A's numbering.
      const bTemplate = await running.db.prisma.promptTemplate.findUniqueOrThrow({ where: { id: fx.b.templateId } });
      expect(answer.json.data?.publishPromptTemplate, answer.text).toMatchObject({ tenantId: A, version: bTemplate.version });
    },
  }),
  'Mutation.activatePromptTemplateVersion': () => ({
    run: () =>
      gql('mutation($id: ID!) { activatePromptTemplateVersion(templateId: $id) { templateId } }', { id: fx.b.templateId }),
    check: refused,
  }),
  'Mutation.updateCourseMetadata': () => ({
    run: () =>
      counted(
        graphqlRequest(
          `${running.system.baseUrl}/graphql`,
          {
            query:
              'mutation($id: ID!, $input: UpdateCourseMetadataInput!) { updateCourseMetadata(courseId: $id, input: $input) { courseId } }',
            variables: { id: fx.b.courseId, input: { tags: ['hijacked'] } },
          },
          { authorization: `Bearer ${tokenA}`, 'x-tenant-id': A, 'idempotency-key': newUlid(), 'if-match': '*' },
        ),
      ),
    check: refused,
  }),
  'Mutation.changeCourseVisibility': () => ({
    run: () =>
      gql('mutation($id: ID!) { changeCourseVisibility(courseId: $id, to: "marketplace", reason: "x") { courseId } }', {
        id: fx.b.courseId,
      }),
    check: refused,
  }),
  'Mutation.archiveCourse': () => ({
    run: () => gql('mutation($id: ID!) { archiveCourse(courseId: $id, reason: "x") { courseId } }', { id: fx.b.courseId }),
    check: refused,
  }),
  'Mutation.deprecateCourseVersion': () => ({
    run: () =>
      gql('mutation($id: ID!) { deprecateCourseVersion(courseVersionId: $id, reason: "x") { courseVersionId } }', {
        id: fx.b.courseVersionId,
      }),
    check: refused,
  }),
  'Mutation.withdrawCourseVersion': () => ({
    run: () =>
      gql('mutation($id: ID!) { withdrawCourseVersion(courseVersionId: $id, reason: "x") { affectedEnrollmentsApprox } }', {
        id: fx.b.courseVersionId,
      }),
    check: refused,
  }),
  'Mutation.replayDeadLetters': () => ({
    run: () =>
      gql('mutation($f: DeadLetterFilterInput!) { replayDeadLetters(filter: $f) { matched replayed letters { eventId } } }', {
        f: { eventIds: [fx.b.deadLetterEventId] },
      }),
    check: (answer, what) => {
      noLeak(answer, what);
      if (answer.json.errors?.length) expect(REFUSED).toContain(answer.json.errors[0].extensions?.code);
      else expect(answer.json.data.replayDeadLetters, what).toMatchObject({ matched: 0, replayed: 0, letters: [] });
    },
  }),
  'Query.dataProtectionAssessments': () => ({
    run: () => gql('{ dataProtectionAssessments { assessmentId residency signedBy } }'),
    check: listWithout('dataProtectionAssessments', 'assessmentId', () => [fx.b.assessmentId]),
  }),
  'Query.featureFlags': () => ({
    run: () => gql('{ featureFlags { featureKey flag enabled updatedBy } }'),
    check: listWithout('featureFlags', 'flag', () => []),
  }),
  'Query.featureFlagChanges': () => ({
    run: () => gql('{ featureFlagChanges(first: 100) { featureKey flag changedBy reason } }'),
    check: listWithout('featureFlagChanges', 'flag', () => []),
  }),
  'Query.providerKeyRetention': () => ({
    run: () => gql('{ providerKeyRetention { serviceName provider } }'),
    check: listWithout('providerKeyRetention', 'serviceName', () => [B_SERVICE]),
  }),
  'Query.reviewQueues': () => ({
    run: () => gql('{ reviewQueues { queueId name members } }'),
    check: listWithout('reviewQueues', 'queueId', () => [fx.b.queueId]),
  }),
  'Query.reviewTasks': () => ({
    run: () => gql('{ reviewTasks(first: 100) { taskId provenanceId facilityId text } }'),
    check: listWithout('reviewTasks', 'taskId', () => [fx.b.taskId]),
  }),
  'Query.reviewTask': () => ({
    run: () => gql('query($id: ID!) { reviewTask(taskId: $id) { taskId provenanceId facilityId text } }', { id: fx.b.taskId }),
    check: absent('reviewTask'),
  }),
  'Query.shadowParity': () => ({
    run: () =>
      gql(
        'query($from: DateTimeISO!, $to: DateTimeISO!) { shadowParity(featureKey: "portal.triage", from: $from, to: $to) { sampleCounts { gateway legacy } legacyP95 } }',
        { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() },
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      // B reported legacy latencies for the feature; none of them count for A.
      expect(answer.json.data?.shadowParity?.sampleCounts, answer.text).toEqual({ gateway: 0, legacy: 0 });
    },
  }),
  'Mutation.assignOnPremRouting': () => ({
    // B signed an ON_PREM assessment; A has none, so A cannot map itself on B's signature.
    run: () => gql('mutation { assignOnPremRouting { ruleId tenantId } }'),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.errors?.[0]?.extensions?.code, answer.text).toMatch(
        /^routing\.(assessment_required|provider_not_configured)$/,
      );
    },
  }),
  'Mutation.recordDataProtectionAssessment': () => ({
    run: () =>
      gql('mutation($input: DataProtectionAssessmentInput!) { recordDataProtectionAssessment(input: $input) { assessmentId } }', {
        input: { residency: 'AF', signedBy: 'a-dpo', signedAt: new Date().toISOString(), documentHash: 'a'.repeat(64) },
      }),
    check: async (answer, what) => {
      noLeak(answer, what);
      const id = answer.json.data?.recordDataProtectionAssessment?.assessmentId;
      expect((await running.db.prisma.dataProtectionAssessment.findUnique({ where: { id } }))?.tenantId, answer.text).toBe(A);
    },
  }),
  'Mutation.backfillLegacyProvenance': () => ({
    // The legacyId B used is A's own row here: not "skipped" because B has one.
    run: () =>
      gql(
        'mutation($rows: [LegacyProvenanceInput!]!) { backfillLegacyProvenance(rows: $rows) { created skipped skippedLegacyIds } }',
        {
          rows: [{ legacyId: 'legacy-1', featureKey: 'portal.triage', createdAt: '2025-01-01T00:00:00Z', actorId: 'a-user' }],
        },
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.backfillLegacyProvenance, answer.text).toMatchObject({ created: 1, skipped: 0 });
    },
  }),
  'Mutation.setFeatureFlag': () => ({
    run: () =>
      gql('mutation($input: SetFeatureFlagInput!) { setFeatureFlag(input: $input) { featureKey flag enabled updatedBy } }', {
        input: { featureKey: 'virtual_care.soap_scaffold', flag: 'multiProvider.enabled', enabled: true, reason: 'a' },
      }),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.setFeatureFlag, answer.text).toMatchObject({ enabled: true });
    },
  }),
  'Mutation.recordConsumerCutover': () => ({
    run: () =>
      gql('mutation($input: ConsumerCutoverInput!) { recordConsumerCutover(input: $input) { serviceName provider } }', {
        input: { serviceName: 'a-portal', provider: 'openai-compatible', cutoverAt: new Date().toISOString() },
      }),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.recordConsumerCutover, answer.text).toMatchObject({ serviceName: 'a-portal' });
    },
  }),
  'Mutation.retireProviderKey': () => ({
    run: () =>
      gql('mutation($s: String!) { retireProviderKey(serviceName: $s, provider: "openai-compatible") { serviceName } }', {
        s: B_SERVICE,
      }),
    check: refused,
  }),
  'Mutation.createReviewQueue': () => ({
    // B's queue name is taken in B only.
    run: () =>
      gql('mutation($input: CreateReviewQueueInput!) { createReviewQueue(input: $input) { queueId name } }', {
        input: { name: 'b-queue-name', members: ['svc:a'] },
      }),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.createReviewQueue?.queueId, answer.text).toBeTruthy();
      expect(answer.json.data.createReviewQueue.queueId).not.toBe(fx.b.queueId);
    },
  }),
  'Mutation.updateReviewQueue': () => ({
    run: () =>
      gql('mutation($id: ID!) { updateReviewQueue(queueId: $id, input: { members: ["svc:a"] }) { queueId } }', {
        id: fx.b.queueId,
      }),
    check: refused,
  }),
  'Mutation.routeReviewTask': () => ({
    run: () =>
      gql('mutation($t: ID!, $q: ID!) { routeReviewTask(taskId: $t, queueId: $q) { taskId } }', {
        t: fx.b.taskId,
        q: fx.b.queueId,
      }),
    check: refused,
  }),
  'Mutation.claimReviewTask': () => ({
    run: () => gql('mutation($t: ID!) { claimReviewTask(taskId: $t) { taskId text } }', { t: fx.b.taskId }),
    check: refused,
  }),
  'Mutation.releaseReviewTask': () => ({
    run: () => gql('mutation($t: ID!) { releaseReviewTask(taskId: $t) { taskId } }', { t: fx.b.taskId }),
    check: refused,
  }),
  'Mutation.approveReviewTask': () => ({
    run: () => gql('mutation($t: ID!) { approveReviewTask(taskId: $t) { provenanceId decision } }', { t: fx.b.taskId }),
    check: refused,
  }),
  'Mutation.approveReviewTaskWithEdits': () => ({
    run: () =>
      gql('mutation($t: ID!) { approveReviewTaskWithEdits(taskId: $t, text: "hijacked") { provenanceId } }', { t: fx.b.taskId }),
    check: refused,
  }),
  'Mutation.rejectReviewTask': () => ({
    run: () => gql('mutation($t: ID!) { rejectReviewTask(taskId: $t, reason: "hijacked") { provenanceId } }', { t: fx.b.taskId }),
    check: refused,
  }),
  'Mutation.setHitlPolicy': () => ({
    run: () => gql('mutation { setHitlPolicy(featureKey: "portal.triage", mode: "optional") { policyId tenantId mode } }'),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.setHitlPolicy, answer.text).toMatchObject({ tenantId: A, mode: 'optional' });
      expect(answer.json.data.setHitlPolicy.policyId).not.toBe(fx.b.policyId);
    },
  }),
  'Mutation.recordLegacyLatencySamples': () => ({
    run: () => gql('mutation { recordLegacyLatencySamples(featureKey: "portal.triage", samples: [100]) }'),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.recordLegacyLatencySamples, answer.text).toBe(1);
    },
  }),
  'Mutation.publishTaxonomy': () => ({
    run: () =>
      gql('mutation($input: PublishTaxonomyInput!) { publishTaxonomy(input: $input) { taxonomyId version nodes { path } } }', {
        input: { namespace: 'skills', expectedVersion: 0, diff: { added: [{ path: 'a-root', label: { en: 'A' } }] } },
      }),
    check: (answer, what) => {
      noLeak(answer, what);
      // The same namespace is A's own taxonomy: version 1, not B's next version.
      expect(answer.json.data?.publishTaxonomy, answer.text).toMatchObject({ version: 1, nodes: [{ path: 'a-root' }] });
      expect(answer.json.data.publishTaxonomy.taxonomyId).not.toBe(fx.b.taxonomyId);
    },
  }),
};

const restNotFound: Check = (answer, what) => {
  noLeak(answer, what);
  expect([403, 404], `${what}: ${answer.text}`).toContain(answer.status);
};

/** REST route id → A's call with B's ids. */
const REST: Record<string, () => Case> = {
  'courses.list': () => ({
    run: () => rest('GET', '/api/v1/courses?limit=100'),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.status).toBe(200);
      expect(answer.json.items.map((c: { courseId: string }) => c.courseId)).not.toContain(fx.b.courseId);
    },
  }),
  'courses.get': () => ({ run: () => rest('GET', `/api/v1/courses/${fx.b.courseId}`), check: restNotFound }),
  'courses.update': () => ({
    run: () => rest('PATCH', `/api/v1/courses/${fx.b.courseId}`, { tags: ['hijacked'] }, 'A', { 'if-match': '*' }),
    check: restNotFound,
  }),
  'ai.assist': () => ({
    run: () =>
      rest('POST', '/v1/ai/assist', {
        featureKey: 'portal.triage',
        variables: { message: 'iso' },
        context: { facilityId: 'fac-a', specialty: 'gp' },
      }),
    check: async (answer, what) => {
      noLeak(answer, what);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.json.template.templateId).not.toBe(fx.b.templateId);
      expect((await running.db.prisma.aIProvenance.findUnique({ where: { id: answer.json.provenanceId } }))?.tenantId).toBe(A);
    },
  }),
  'ai.provenance.get': () => ({ run: () => rest('GET', `/v1/ai/provenance/${fx.b.provenanceId}`), check: restNotFound }),
  'ai.routing-rules.create': () => ({
    run: () =>
      rest('POST', '/v1/admin/routing-rules', {
        featureKey: 'virtual_care.soap_scaffold',
        primary: { provider: 'mock', model: 'a' },
        fallbacks: [],
      }),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.status, answer.text).toBe(201);
      expect(answer.json.tenantId).toBe(A);
    },
  }),
  'catalog.dlq.replay': () => ({
    run: () => rest('POST', '/admin/v1/catalog/dlq/replay', { eventIds: [fx.b.deadLetterEventId] }),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.json).toEqual({ matched: 0, replayed: 0 });
    },
  }),
  'ai.health': () => ({
    // Public: answers without a tenant and must carry no tenant's data.
    run: () => counted(exchange(`${running.system.baseUrl}/v1/ai/health`)),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.status).toBe(200);
    },
  }),
};

/** `<graph>.<Type>` → the representation of B's entity and the fields A asks for. */
const ENTITIES: Record<string, () => { representation: Record<string, string>; selection: string; check?: Check }> = {
  'AI.AIProvenance': () => ({
    representation: { provenanceId: fx.b.provenanceId },
    selection: 'provenanceId tenantId facilityId',
  }),
  'AI.Course': () => ({
    representation: { courseId: fx.a.courseId },
    // A's own course: B's records about it (subjectRef = A's course id) are B's, not A's.
    selection: 'courseId aiProvenance(first: 50) { provenanceId tenantId facilityId }',
    check: (answer, what) => {
      noLeak(answer, what);
      const entity = answer.json.data?._entities?.[0];
      if (entity)
        expect(entity.aiProvenance.map((p: { provenanceId: string }) => p.provenanceId)).not.toContain(fx.b.provenanceOnACourse);
    },
  }),
  'AI.HITLPolicy': () => ({ representation: { policyId: fx.b.policyId }, selection: 'policyId tenantId updatedBy' }),
  'AI.PromptTemplate': () => ({ representation: { templateId: fx.b.templateId }, selection: 'templateId tenantId body' }),
  'AI.ProviderRoutingRule': () => ({
    representation: { ruleId: fx.b.ruleId },
    selection: 'ruleId tenantId versions { primary { model } }',
  }),
  'CATALOG.Course': () => ({ representation: { courseId: fx.b.courseId }, selection: COURSE_FIELDS }),
  'CATALOG.CourseVersion': () => ({
    representation: { courseVersionId: fx.b.courseVersionId },
    selection: 'courseVersionId courseId versionLabel',
  }),
  'CATALOG.Taxonomy': () => ({
    representation: { taxonomyId: fx.b.taxonomyId },
    selection: 'taxonomyId namespace nodes { path label }',
  }),
};

/** Catalog consumer (durable) → events of tenant A that name B's things. */
const CONSUMERS: Record<string, () => Promise<void>> = {
  [CATALOG_DURABLES.playPackageBuilt]: async () => {
    // A's envelope carrying B's tenant in the payload: refused (dead-lettered), nothing written.
    const crossed = consumedEnvelope('built', builtPayload(B, fx.b.slug, '9.9.9', { title: { en: 'hijack' } }), { tenantId: A });
    await publishEvent(crossed);
    await until(
      async () => ((await deadLetterOf(crossed.eventId)) ? true : undefined),
      'the crossed built event to be dead-lettered',
    );
    // A's own package with B's slug: A gets a course of its own; B's course gets no version.
    const own = consumedEnvelope('built', builtPayload(A, fx.b.slug, '1.0.0', { title: { en: 'A package' } }));
    await publishEvent(own);
    const course = await until(
      () =>
        running.db.prisma.course
          .findFirst({ where: { tenantId: A, slug: fx.b.slug }, include: { versions: true } })
          .then((c) => (c?.versions.length ? c : undefined)),
      "A's course with B's slug",
    );
    expect(course.id).not.toBe(fx.b.courseId);
  },
  [CATALOG_DURABLES.courseDraftPublished]: async () => {
    const crossed = consumedEnvelope('draft', draftPayload(B, fx.b.slug, { title: { en: 'hijack' }, tags: ['hijack'] }), {
      tenantId: A,
    });
    await publishEvent(crossed);
    await until(async () => ((await deadLetterOf(crossed.eventId)) ? true : undefined), 'the crossed draft to be dead-lettered');
    const own = consumedEnvelope('draft', draftPayload(A, 'iso-a-draft-only', { title: { en: 'A draft' } }));
    await publishEvent(own);
    await until(
      () => running.db.prisma.course.findFirst({ where: { tenantId: A, slug: 'iso-a-draft-only' } }).then((c) => c ?? undefined),
      "A's draft course",
    );
  },
  [CATALOG_DURABLES.gdprSubjectRequest]: async () => {
    // A erases a user who authors courses in both tenants: only A's course is redacted.
    const request = consumedEnvelope('gdpr', gdprPayload(A, fx.b.author, 'erasure'));
    await publishEvent(request);
    await until(
      () =>
        running.db.prisma.course
          .findUnique({ where: { id: fx.a.courseId } })
          .then((c) => (JSON.stringify(c?.authors).includes('[redacted]') ? c : undefined)),
      "A's course redacted",
    );
  },
};

// ------------------------------------------------------------------------------ enumeration

const supergraph = parse(fs.readFileSync(SUPERGRAPH_PATH, 'utf8'));
const objectType = (name: string) =>
  supergraph.definitions.find(
    (d): d is ObjectTypeDefinitionNode => d.kind === Kind.OBJECT_TYPE_DEFINITION && d.name.value === name,
  );
const rootFields = ['Query', 'Mutation'].flatMap((root) =>
  (objectType(root)?.fields ?? []).map((f) => `${root}.${f.name.value}`),
);
const entityKeys = supergraph.definitions
  .filter((d): d is ObjectTypeDefinitionNode => d.kind === Kind.OBJECT_TYPE_DEFINITION)
  .flatMap((type) =>
    (type.directives ?? [])
      .filter((d) => d.name.value === 'join__type' && d.arguments?.some((a) => a.name.value === 'key'))
      .filter((d) => {
        const resolvable = d.arguments?.find((a) => a.name.value === 'resolvable');
        return !resolvable || resolvable.value.kind !== Kind.BOOLEAN || resolvable.value.value;
      })
      .map((d) => {
        const graph = d.arguments!.find((a) => a.name.value === 'graph')!.value as unknown as StringValueNode;
        return `${graph.value}.${type.name.value}`;
      }),
  );

describe('the isolation matrix covers everything', () => {
  it('every query and mutation of the supergraph, REST route, entity type and catalog consumer has a case', () => {
    expect(rootFields.length).toBeGreaterThan(20);
    expect(rootFields.filter((f) => !OPERATIONS[f])).toEqual([]);
    expect(ROUTES.map((r) => r.id).filter((id) => !REST[id])).toEqual([]);
    expect(entityKeys.filter((k) => !ENTITIES[k])).toEqual([]);
    expect(Object.values(CATALOG_DURABLES).filter((d) => !CONSUMERS[d])).toEqual([]);
    // No stale cases either: each case names something that exists.
    expect(Object.keys(OPERATIONS).filter((f) => !rootFields.includes(f))).toEqual([]);
    expect(Object.keys(ENTITIES).filter((k) => !entityKeys.includes(k))).toEqual([]);
  });
});

describe.runIf(runs)('tenant isolation: A with B’s ids', () => {
  let before: string;

  beforeAll(async () => {
    nats = await startPrivateNats();
    running = await startReliabilitySystem({ NATS_URL: nats.url, CONSUMER_ACK_WAIT_SECONDS: '5', AI_CONFIG_CACHE_MS: '0' });
    bus = await connectJetStreamBus(nats.url, { logger: silentLogger });
    tokenA = await running.system.mintToken(A, SCOPES, { subject: 'svc:a' });
    tokenB = await running.system.mintToken(B, SCOPES, { subject: B_SUBJECT });
    const prisma = running.db.prisma;

    // B's course and version, and A's, through the consumer as in production.
    const author = { userId: fx.b.author, role: 'author', displayName: `${MARK} author` };
    await publishEvent(
      consumedEnvelope('built', builtPayload(B, fx.b.slug, '1.0.0', { title: { en: MARK }, authors: [author] })),
    );
    await publishEvent(
      consumedEnvelope(
        'built',
        builtPayload(A, 'iso-a-course', '1.0.0', { authors: [{ ...author, displayName: 'Shared author' }] }),
      ),
    );
    const [bCourse, aCourse] = await Promise.all(
      [
        [B, fx.b.slug],
        [A, 'iso-a-course'],
      ].map(([tenantId, slug]) =>
        until(
          () =>
            prisma.course
              .findFirst({ where: { tenantId, slug }, include: { versions: true } })
              .then((c) => (c?.versions.length ? c : undefined)),
          `the course ${slug}`,
        ),
      ),
    );
    Object.assign(fx.b, { courseId: bCourse.id, courseVersionId: bCourse.versions[0].id });
    Object.assign(fx.a, { courseId: aCourse.id, courseVersionId: aCourse.versions[0].id });

    // B's taxonomy, routing rule, template and provenance records, through the API as B.
    const taxonomy = await gql(
      'mutation($input: PublishTaxonomyInput!) { publishTaxonomy(input: $input) { taxonomyId } }',
      { input: { namespace: 'skills', expectedVersion: 0, diff: { added: [{ path: 'b-root', label: { en: MARK } }] } } },
      'B',
    );
    fx.b.taxonomyId = taxonomy.json.data.publishTaxonomy.taxonomyId;
    const rule = await rest(
      'POST',
      '/v1/admin/routing-rules',
      { featureKey: 'portal.triage', primary: { provider: 'mock', model: MARK }, fallbacks: [] },
      'B',
    );
    expect(rule.status, rule.text).toBe(201);
    fx.b.ruleId = rule.json.ruleId;
    const template = await gql(
      'mutation($input: PublishPromptTemplateInput!) { publishPromptTemplate(input: $input) { templateId } }',
      { input: { featureKey: 'portal.triage', body: `${MARK} {{message}} {{locale}}` } },
      'B',
    );
    fx.b.templateId = template.json.data.publishPromptTemplate.templateId;
    const assist = (subjectRef: string) =>
      rest(
        'POST',
        '/v1/ai/assist',
        { featureKey: 'portal.triage', variables: { message: 'b' }, context: { facilityId: MARK, specialty: 'gp', subjectRef } },
        'B',
      );
    const [own, onA] = [await assist(fx.b.courseId), await assist(fx.a.courseId)];
    expect([own.status, onA.status], own.text).toEqual([200, 200]);
    [fx.b.provenanceId, fx.b.provenanceOnACourse] = [own.json.provenanceId, onA.json.provenanceId];
    // B's governance records, through the API as B.
    const policy = await gql('mutation { setHitlPolicy(featureKey: "portal.triage", mode: "required") { policyId } }', {}, 'B');
    expect(policy.json.errors, policy.text).toBeUndefined();
    fx.b.policyId = policy.json.data.setHitlPolicy.policyId;
    const queue = await gql(
      'mutation($input: CreateReviewQueueInput!) { createReviewQueue(input: $input) { queueId } }',
      { input: { name: 'b-queue-name', members: [B_SUBJECT] } },
      'B',
    );
    expect(queue.json.errors, queue.text).toBeUndefined();
    fx.b.queueId = queue.json.data.createReviewQueue.queueId;
    const held = await assist(fx.b.courseId);
    expect(held.status, held.text).toBe(202);
    fx.b.taskId = (await prisma.reviewTask.findFirstOrThrow({ where: { tenantId: B, provenanceId: held.json.provenanceId } })).id;
    const assessment = await gql(
      'mutation($input: DataProtectionAssessmentInput!) { recordDataProtectionAssessment(input: $input) { assessmentId } }',
      { input: { residency: 'ON_PREM', signedBy: MARK, signedAt: new Date().toISOString(), documentHash: 'b'.repeat(64) } },
      'B',
    );
    expect(assessment.json.errors, assessment.text).toBeUndefined();
    fx.b.assessmentId = assessment.json.data.recordDataProtectionAssessment.assessmentId;
    const setup = [
      await gql(
        'mutation($input: SetFeatureFlagInput!) { setFeatureFlag(input: $input) { flag } }',
        { input: { featureKey: 'virtual_care.soap_scaffold', flag: 'multiProvider.enabled', enabled: false, reason: MARK } },
        'B',
      ),
      await gql(
        'mutation($input: ConsumerCutoverInput!) { recordConsumerCutover(input: $input) { serviceName } }',
        { input: { serviceName: B_SERVICE, provider: 'openai-compatible', cutoverAt: new Date().toISOString() } },
        'B',
      ),
      await gql('mutation { recordLegacyLatencySamples(featureKey: "portal.triage", samples: [4321, 4322]) }', {}, 'B'),
      await gql(
        'mutation($rows: [LegacyProvenanceInput!]!) { backfillLegacyProvenance(rows: $rows) { created } }',
        {
          rows: [
            {
              legacyId: 'legacy-1',
              featureKey: 'portal.triage',
              createdAt: '2025-01-01T00:00:00Z',
              actorId: MARK,
              facilityId: MARK,
            },
          ],
        },
        'B',
      ),
    ];
    for (const answer of setup) expect(answer.json.errors, answer.text).toBeUndefined();

    // B's dead letter: a built event with a label that is not major.minor.patch.
    const invalid = consumedEnvelope('built', builtPayload(B, fx.b.slug, '1.0.0'));
    (invalid.payload as Record<string, unknown>).versionLabel = 'v-not-semver';
    fx.b.deadLetterEventId = invalid.eventId;
    await publishEvent(invalid);
    await until(async () => ((await deadLetterOf(invalid.eventId)) ? true : undefined), "B's dead letter");
    before = await snapshotOfB();
  });

  afterAll(async () => {
    await bus?.close().catch(() => undefined);
    await running?.close();
    await nats?.destroy();
    recordFigures({
      suite: 'tenant isolation',
      faultsInjected: 0,
      eventsChecked: tally.events,
      lost: 0,
      duplicated: 0,
      requestsTried: tally.requests,
      serverErrors: tally.serverErrors,
      notes: [
        `${rootFields.length} operations, ${ROUTES.length} REST routes, ${entityKeys.length} entity types, ${Object.keys(CATALOG_DURABLES).length} consumers`,
      ],
    });
  });

  it('B can see its own things (the control)', async () => {
    const answer = await gql(`query($id: ID!) { course(courseId: $id) { ${COURSE_FIELDS} } }`, { id: fx.b.courseId }, 'B');
    expect(answer.text).toContain(MARK);
    const provenance = await rest('GET', `/v1/ai/provenance/${fx.b.provenanceId}`, undefined, 'B');
    expect(provenance.status).toBe(200);
  });

  it.each(rootFields)('%s: not-found or 403, never B’s data', async (field) => {
    const c = OPERATIONS[field]();
    await c.check(await c.run(), field);
  });

  it.each(ROUTES.map((r) => [r.id, `${r.method} ${r.path}`]))('REST %s (%s): not-found or 403, never B’s data', async (id) => {
    const c = REST[id]();
    await c.check(await c.run(), id);
  });

  it.each(entityKeys)('_entities of %s on the subgraph, called directly by A: null, never B’s data', async (key) => {
    const [graph, type] = key.split('.');
    const entity = ENTITIES[key]();
    const url = graph === 'AI' ? running.aiUrl : running.catalogUrl;
    const query = `query($r: [_Any!]!) { _entities(representations: $r) { ... on ${type} { ${entity.selection} } } }`;
    const answer = await gql(query, { r: [{ __typename: type, ...entity.representation }] }, 'A', url);
    if (entity.check) await entity.check(answer, key);
    else {
      noLeak(answer, key);
      if (!answer.json.errors?.length) expect(answer.json.data._entities, key).toEqual([null]);
    }
  });

  it('a subgraph called directly without the forwarded token refuses, _entities included', async () => {
    for (const url of [running.catalogUrl, running.aiUrl]) {
      const answer = await counted(
        graphqlRequest(
          url,
          {
            query: 'query($r: [_Any!]!) { _entities(representations: $r) { __typename } }',
            variables: { r: [{ __typename: 'Course', courseId: fx.b.courseId }] },
          },
          { 'x-tenant-id': B },
        ),
      );
      expect(answer.status).toBe(401);
      noLeak(answer, url);
    }
  });

  it.each(Object.values(CATALOG_DURABLES))('consumer %s: A’s events naming B’s things change nothing of B’s', async (durable) => {
    await CONSUMERS[durable]();
  });

  it('after all of the above, every row and dead letter of B is unchanged', async () => {
    expect(await snapshotOfB()).toBe(before);
  });
});
