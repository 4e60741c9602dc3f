import fs from 'node:fs';
import { Kind, parse, type ObjectTypeDefinitionNode, type StringValueNode } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../events/bus/jetstream-bus.js';
import { subjectFor, type EventEnvelope } from '../../events/envelope.js';
import { SUPERGRAPH_PATH } from '../../gateway/supergraph.js';
import { loadSystemConfig } from '../../processes/config.js';
import { newId, newUlid } from '../../platform/ids.js';
import { silentLogger } from '../../platform/observability/logger.js';
import { ROUTES } from '../../rest-compat/route-table.js';
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
import { eventually } from '../support/eventually.js';

/**
 * The tenant isolation matrix. Tenant B owns one of everything (course, version, taxonomy, routing
 * rule, prompt template, provenance records, HITL policy, dead letter), each carrying a marker
 * string. A caller of tenant A then uses B's ids on every door: each query and mutation of the
 * supergraph, each REST route, `_entities` of each entity type on each subgraph called directly,
 * and each event consumer. A must get not-found (null, an empty list, request.not_found) or 403 — never
 * the marker, never B's tenant id — and B's rows must be byte-identical afterwards.
 *
 * The matrix is enumerated from the committed supergraph, the REST route table and the catalog's
 * consumer table: an operation, route, entity or consumer added without an isolation case here
 * fails the "every … has a case" test.
 */
const A = newId('tenant');
const B = newId('tenant');
const MARK = `SECRET-OF-B-${newUlid()}`;
const SCOPES = 'catalog.read catalog.admin ai.assist ai.admin ai.review ai.audit';
/** B's caller: every row B writes carries it (updatedBy, createdBy, changedBy, members, ...). */
const B_SUBJECT = `svc:${MARK.toLowerCase()}`;
const B_SERVICE = `b-${MARK.toLowerCase()
  .replace(/[^a-z0-9]/g, '')
  .slice(-20)}`;
const REFUSED = ['request.not_found', 'FORBIDDEN', 'authz.tenant_not_a_member'];

const runs = privateServicesAvailable('tenant isolation', ['nats-server']);

let nats: PrivateNats;
let running: ReliabilitySystem;
let bus: EventBus;
let tokenA: string;
let tokenB: string;
const tally = { requests: 0, serverErrors: 0, events: 0 };
const config = loadSystemConfig({});

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

/** B's quota settings (set through the API as B) and the ones A writes for itself. */
const B_QUOTA = { enabled: false, requestsPerMinute: 4321, tokensPerDay: 4_321_000 };
const A_QUOTA = { enabled: false, requestsPerMinute: 77, tokensPerDay: 0 };

// ------------------------------------------------------------------------------ helpers

async function counted(answer: Promise<HttpAnswer>): Promise<HttpAnswer> {
  const result = await answer;
  tally.requests += 1;
  if (result.status >= 500) tally.serverErrors += 1;
  return result;
}

/** Who calls: A or B with every scope, or a caller of its own (the scope matrix's narrower tokens). */
interface Caller {
  token: string;
  tenantId: string;
}
type As = 'A' | 'B' | Caller | undefined;

function caller(as: As): Caller {
  if (as === 'B') return { token: tokenB, tenantId: B };
  return as === undefined || as === 'A' ? { token: tokenA, tenantId: A } : as;
}

function authHeaders(as: As): Record<string, string> {
  const { token, tenantId } = caller(as);
  return { authorization: `Bearer ${token}`, 'x-tenant-id': tenantId };
}

function gql(query: string, variables: Record<string, unknown> = {}, as: As = 'A', url = `${running.system.baseUrl}/graphql`) {
  const mutation = /^\s*mutation/.test(query);
  return counted(
    graphqlRequest(url, { query, variables }, { ...authHeaders(as), ...(mutation ? { 'idempotency-key': newUlid() } : {}) }),
  );
}

function rest(method: string, path: string, body?: unknown, as: As = 'A', headers: Record<string, string> = {}) {
  return counted(
    exchange(`${running.system.baseUrl}${path}`, {
      method,
      headers: {
        ...authHeaders(as),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(method === 'GET' ? {} : { 'idempotency-key': newUlid() }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
}

/** A probe for `eventually`: passes with what `read` found, once it finds something. */
function defined<T>(read: () => Promise<T | undefined>): () => Promise<T> {
  return async () => {
    const value = await read();
    if (value === undefined) throw new Error('nothing yet');
    return value;
  };
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
    settings: await p.tenantSettings.findMany({ where: { tenantId: B } }),
    letters: letters.map((l) => l.seq),
  });
}

// ------------------------------------------------------------------------------ the matrix

type Check = (answer: HttpAnswer, what: string) => void | Promise<void>;
interface Case {
  /** Calls as A unless another caller is given. */
  run(as?: Caller): Promise<HttpAnswer>;
  check: Check;
}

const COURSE_FIELDS = 'courseId slug title tenantId authors { userId displayName }';

/** Query.<field> and Mutation.<field> → how A calls it with B's ids, and what A may get. */
const OPERATIONS: Record<string, () => Case> = {
  'Query.provenance': () => ({
    run: (as) =>
      gql(
        'query($id: ID!) { provenance(provenanceId: $id) { provenanceId tenantId facilityId } }',
        { id: fx.b.provenanceId },
        as,
      ),
    check: absent('provenance'),
  }),
  'Query.provenanceReceiptExport': () => ({
    run: (as) =>
      gql(
        'query($from: DateTimeISO!, $to: DateTimeISO!) { provenanceReceiptExport(from: $from, to: $to) }',
        { from: new Date(Date.now() - 86_400_000).toISOString(), to: new Date(Date.now() + 86_400_000).toISOString() },
        as,
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.text, what).not.toContain(fx.b.provenanceId);
    },
  }),
  'Mutation.rotateReceiptSigningKey': () => ({
    // Keys are the platform's, not a tenant's: A rotates with platform.admin and learns nothing of B.
    run: async (as) => gql('mutation { rotateReceiptSigningKey }', {}, as ?? (await platformA())),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.rotateReceiptSigningKey, answer.text).toEqual(expect.any(String));
    },
  }),
  'Query.hitlPolicies': () => ({
    run: (as) => gql('{ hitlPolicies { policyId tenantId featureKey updatedBy } }', {}, as),
    check: listWithout('hitlPolicies', 'policyId', () => [fx.b.policyId]),
  }),
  'Query.routingRules': () => ({
    run: (as) => gql('{ routingRules { ruleId tenantId versions { primary { model } } } }', {}, as),
    check: listWithout('routingRules', 'ruleId', () => [fx.b.ruleId]),
  }),
  'Query.routingRule': () => ({
    run: (as) =>
      gql(
        'query($id: ID!) { routingRule(ruleId: $id) { ruleId tenantId versions { primary { model } } } }',
        { id: fx.b.ruleId },
        as,
      ),
    check: absent('routingRule'),
  }),
  'Query.promptTemplates': () => ({
    run: (as) => gql('{ promptTemplates { templateId tenantId body } }', {}, as),
    check: listWithout('promptTemplates', 'templateId', () => [fx.b.templateId]),
  }),
  'Query.promptTemplate': () => ({
    run: (as) =>
      gql('query($id: ID!) { promptTemplate(templateId: $id) { templateId tenantId body } }', { id: fx.b.templateId }, as),
    check: absent('promptTemplate'),
  }),
  'Query.course': () => ({
    run: (as) =>
      gql(
        `query($id: ID!) { course(courseId: $id) { ${COURSE_FIELDS} aiProvenance { provenanceId } } }`,
        { id: fx.b.courseId },
        as,
      ),
    check: absent('course'),
  }),
  'Query.courses': () => ({
    run: (as) => gql(`{ courses(first: 100) { count edges { node { ${COURSE_FIELDS} } } } }`, {}, as),
    check: (answer, what) => {
      noLeak(answer, what);
      const ids = answer.json.data.courses.edges.map((e: { node: { courseId: string } }) => e.node.courseId);
      expect(ids, what).not.toContain(fx.b.courseId);
      expect(ids, what).toContain(fx.a.courseId);
    },
  }),
  'Query.courseVersions': () => ({
    run: (as) => gql('query($id: ID!) { courseVersions(courseId: $id) { courseVersionId courseId } }', { id: fx.b.courseId }, as),
    check: (answer, what) => {
      noLeak(answer, what);
      if (answer.json.errors?.length) expect(REFUSED).toContain(answer.json.errors[0].extensions?.code);
      else expect(answer.json.data.courseVersions, what).toEqual([]);
    },
  }),
  'Query.courseVersion': () => ({
    run: (as) =>
      gql(
        `query($id: ID!) { courseVersion(courseVersionId: $id) { courseVersionId course { ${COURSE_FIELDS} } } }`,
        {
          id: fx.b.courseVersionId,
        },
        as,
      ),
    check: absent('courseVersion'),
  }),
  'Query.taxonomy': () => ({
    run: (as) =>
      gql(
        'query($id: ID!) { taxonomy(taxonomyId: $id) { taxonomyId namespace nodes { path label } } }',
        { id: fx.b.taxonomyId },
        as,
      ),
    check: absent('taxonomy'),
  }),
  'Mutation.assist': () => ({
    // B overrides portal.triage with its own rule (model = the marker) and template (body = the
    // marker): neither may serve A, and A's record must not land in B's tenant.
    run: (as) =>
      gql(
        'mutation($input: AssistInput!) { assist(input: $input) { provenanceId status text model template { templateId hash } } }',
        {
          input: {
            featureKey: 'portal.triage',
            variables: { message: 'iso' },
            context: { facilityId: 'fac-a', specialty: 'gp' },
          },
        },
        as,
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
    run: (as) =>
      gql(
        'mutation($input: CreateRoutingRuleInput!) { createRoutingRule(input: $input) { ruleId tenantId } }',
        {
          input: { featureKey: 'portal.triage', primary: { provider: 'mock', model: 'a-model' }, fallbacks: [] },
        },
        as,
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.createRoutingRule?.tenantId, answer.text).toBe(A);
    },
  }),
  'Mutation.updateRoutingRule': () => ({
    run: (as) =>
      gql(
        'mutation($id: ID!, $input: UpdateRoutingRuleInput!) { updateRoutingRule(ruleId: $id, input: $input) { ruleId } }',
        {
          id: fx.b.ruleId,
          input: { primary: { provider: 'mock', model: 'hijack' }, fallbacks: [] },
        },
        as,
      ),
    check: refused,
  }),
  'Mutation.activateRoutingRuleVersion': () => ({
    run: (as) =>
      gql('mutation($id: ID!) { activateRoutingRuleVersion(ruleId: $id, version: 1) { ruleId } }', { id: fx.b.ruleId }, as),
    check: refused,
  }),
  'Mutation.publishPromptTemplate': () => ({
    run: (as) =>
      gql(
        'mutation($input: PublishPromptTemplateInput!) { publishPromptTemplate(input: $input) { templateId tenantId version } }',
        {
          input: { featureKey: 'portal.triage', body: 'A says {{message}} in {{locale}}' },
        },
        as,
      ),
    check: async (answer, what) => {
      noLeak(answer, what);
      // Versions are per tenant: B's version of the feature does not move A's numbering.
      const bTemplate = await running.db.prisma.promptTemplate.findUniqueOrThrow({ where: { id: fx.b.templateId } });
      expect(answer.json.data?.publishPromptTemplate, answer.text).toMatchObject({ tenantId: A, version: bTemplate.version });
    },
  }),
  'Mutation.activatePromptTemplateVersion': () => ({
    run: (as) =>
      gql('mutation($id: ID!) { activatePromptTemplateVersion(templateId: $id) { templateId } }', { id: fx.b.templateId }, as),
    check: refused,
  }),
  'Mutation.updateCourseMetadata': () => ({
    run: (as) =>
      counted(
        graphqlRequest(
          `${running.system.baseUrl}/graphql`,
          {
            query:
              'mutation($id: ID!, $input: UpdateCourseMetadataInput!) { updateCourseMetadata(courseId: $id, input: $input) { courseId } }',
            variables: { id: fx.b.courseId, input: { tags: ['hijacked'] } },
          },
          { ...authHeaders(as), 'idempotency-key': newUlid(), 'if-match': '*' },
        ),
      ),
    check: refused,
  }),
  'Mutation.changeCourseVisibility': () => ({
    run: (as) =>
      gql(
        'mutation($id: ID!) { changeCourseVisibility(courseId: $id, to: "marketplace", reason: "x") { courseId } }',
        {
          id: fx.b.courseId,
        },
        as,
      ),
    check: refused,
  }),
  'Mutation.archiveCourse': () => ({
    run: (as) => gql('mutation($id: ID!) { archiveCourse(courseId: $id, reason: "x") { courseId } }', { id: fx.b.courseId }, as),
    check: refused,
  }),
  'Mutation.deprecateCourseVersion': () => ({
    run: (as) =>
      gql(
        'mutation($id: ID!) { deprecateCourseVersion(courseVersionId: $id, reason: "x") { courseVersionId } }',
        {
          id: fx.b.courseVersionId,
        },
        as,
      ),
    check: refused,
  }),
  'Mutation.withdrawCourseVersion': () => ({
    run: (as) =>
      gql(
        'mutation($id: ID!) { withdrawCourseVersion(courseVersionId: $id, reason: "x") { affectedEnrollmentsApprox } }',
        {
          id: fx.b.courseVersionId,
        },
        as,
      ),
    check: refused,
  }),
  'Mutation.replayDeadLetters': () => ({
    run: (as) =>
      gql(
        'mutation($f: DeadLetterFilterInput!) { replayDeadLetters(filter: $f) { matched replayed letters { eventId } } }',
        {
          f: { eventIds: [fx.b.deadLetterEventId] },
        },
        as,
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      if (answer.json.errors?.length) expect(REFUSED).toContain(answer.json.errors[0].extensions?.code);
      else expect(answer.json.data.replayDeadLetters, what).toMatchObject({ matched: 0, replayed: 0, letters: [] });
    },
  }),
  'Query.dataProtectionAssessments': () => ({
    run: (as) => gql('{ dataProtectionAssessments { assessmentId residency signedBy } }', {}, as),
    check: listWithout('dataProtectionAssessments', 'assessmentId', () => [fx.b.assessmentId]),
  }),
  'Query.featureFlags': () => ({
    run: (as) => gql('{ featureFlags { featureKey flag enabled updatedBy } }', {}, as),
    check: listWithout('featureFlags', 'flag', () => []),
  }),
  'Query.featureFlagChanges': () => ({
    run: (as) => gql('{ featureFlagChanges(first: 100) { featureKey flag changedBy reason } }', {}, as),
    check: listWithout('featureFlagChanges', 'flag', () => []),
  }),
  'Query.providerKeyRetention': () => ({
    run: (as) => gql('{ providerKeyRetention { serviceName provider } }', {}, as),
    check: listWithout('providerKeyRetention', 'serviceName', () => [B_SERVICE]),
  }),
  'Query.reviewQueues': () => ({
    run: (as) => gql('{ reviewQueues { queueId name members } }', {}, as),
    check: listWithout('reviewQueues', 'queueId', () => [fx.b.queueId]),
  }),
  'Query.reviewTasks': () => ({
    run: (as) => gql('{ reviewTasks(first: 100) { taskId provenanceId facilityId text } }', {}, as),
    check: listWithout('reviewTasks', 'taskId', () => [fx.b.taskId]),
  }),
  'Query.reviewTask': () => ({
    run: (as) =>
      gql('query($id: ID!) { reviewTask(taskId: $id) { taskId provenanceId facilityId text } }', { id: fx.b.taskId }, as),
    check: absent('reviewTask'),
  }),
  'Query.shadowParity': () => ({
    run: (as) =>
      gql(
        'query($from: DateTimeISO!, $to: DateTimeISO!) { shadowParity(featureKey: "portal.triage", from: $from, to: $to) { sampleCounts { gateway legacy } legacyP95 } }',
        { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() },
        as,
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      // B reported legacy latencies for the feature; none of them count for A.
      expect(answer.json.data?.shadowParity?.sampleCounts, answer.text).toEqual({ gateway: 0, legacy: 0 });
    },
  }),
  'Mutation.assignOnPremRouting': () => ({
    // B signed an ON_PREM assessment; A has none, so A cannot map itself on B's signature.
    run: (as) => gql('mutation { assignOnPremRouting { ruleId tenantId } }', {}, as),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.errors?.[0]?.extensions?.code, answer.text).toMatch(
        /^routing\.(assessment_required|provider_not_configured)$/,
      );
    },
  }),
  'Mutation.recordDataProtectionAssessment': () => ({
    run: (as) =>
      gql(
        'mutation($input: DataProtectionAssessmentInput!) { recordDataProtectionAssessment(input: $input) { assessmentId } }',
        {
          input: { residency: 'AF', signedBy: 'a-dpo', signedAt: new Date().toISOString(), documentHash: 'a'.repeat(64) },
        },
        as,
      ),
    check: async (answer, what) => {
      noLeak(answer, what);
      const id = answer.json.data?.recordDataProtectionAssessment?.assessmentId;
      expect((await running.db.prisma.dataProtectionAssessment.findUnique({ where: { id } }))?.tenantId, answer.text).toBe(A);
    },
  }),
  'Mutation.backfillLegacyProvenance': () => ({
    // The legacyId B used is A's own row here: not "skipped" because B has one.
    run: (as) =>
      gql(
        'mutation($rows: [LegacyProvenanceInput!]!) { backfillLegacyProvenance(rows: $rows) { created skipped skippedLegacyIds } }',
        {
          rows: [{ legacyId: 'legacy-1', featureKey: 'portal.triage', createdAt: '2025-01-01T00:00:00Z', actorId: 'a-user' }],
        },
        as,
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.backfillLegacyProvenance, answer.text).toMatchObject({ created: 1, skipped: 0 });
    },
  }),
  'Mutation.setFeatureFlag': () => ({
    run: (as) =>
      gql(
        'mutation($input: SetFeatureFlagInput!) { setFeatureFlag(input: $input) { featureKey flag enabled updatedBy } }',
        {
          input: { featureKey: 'virtual_care.soap_scaffold', flag: 'multiProvider.enabled', enabled: true, reason: 'a' },
        },
        as,
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.setFeatureFlag, answer.text).toMatchObject({ enabled: true });
    },
  }),
  'Mutation.recordConsumerCutover': () => ({
    run: (as) =>
      gql(
        'mutation($input: ConsumerCutoverInput!) { recordConsumerCutover(input: $input) { serviceName provider } }',
        {
          input: { serviceName: 'a-portal', provider: 'openai-compatible', cutoverAt: new Date().toISOString() },
        },
        as,
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.recordConsumerCutover, answer.text).toMatchObject({ serviceName: 'a-portal' });
    },
  }),
  'Mutation.retireProviderKey': () => ({
    run: (as) =>
      gql(
        'mutation($s: String!) { retireProviderKey(serviceName: $s, provider: "openai-compatible") { serviceName } }',
        {
          s: B_SERVICE,
        },
        as,
      ),
    check: refused,
  }),
  'Mutation.createReviewQueue': () => ({
    // B's queue name is taken in B only.
    run: (as) =>
      gql(
        'mutation($input: CreateReviewQueueInput!) { createReviewQueue(input: $input) { queueId name } }',
        {
          input: { name: 'b-queue-name', members: ['svc:a'] },
        },
        as,
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.createReviewQueue?.queueId, answer.text).toBeTruthy();
      expect(answer.json.data.createReviewQueue.queueId).not.toBe(fx.b.queueId);
    },
  }),
  'Mutation.updateReviewQueue': () => ({
    run: (as) =>
      gql(
        'mutation($id: ID!) { updateReviewQueue(queueId: $id, input: { members: ["svc:a"] }) { queueId } }',
        {
          id: fx.b.queueId,
        },
        as,
      ),
    check: refused,
  }),
  'Mutation.routeReviewTask': () => ({
    run: (as) =>
      gql(
        'mutation($t: ID!, $q: ID!) { routeReviewTask(taskId: $t, queueId: $q) { taskId } }',
        {
          t: fx.b.taskId,
          q: fx.b.queueId,
        },
        as,
      ),
    check: refused,
  }),
  'Mutation.claimReviewTask': () => ({
    run: (as) => gql('mutation($t: ID!) { claimReviewTask(taskId: $t) { taskId text } }', { t: fx.b.taskId }, as),
    check: refused,
  }),
  'Mutation.releaseReviewTask': () => ({
    run: (as) => gql('mutation($t: ID!) { releaseReviewTask(taskId: $t) { taskId } }', { t: fx.b.taskId }, as),
    check: refused,
  }),
  'Mutation.approveReviewTask': () => ({
    run: (as) => gql('mutation($t: ID!) { approveReviewTask(taskId: $t) { provenanceId decision } }', { t: fx.b.taskId }, as),
    check: refused,
  }),
  'Mutation.approveReviewTaskWithEdits': () => ({
    run: (as) =>
      gql(
        'mutation($t: ID!) { approveReviewTaskWithEdits(taskId: $t, text: "hijacked") { provenanceId } }',
        { t: fx.b.taskId },
        as,
      ),
    check: refused,
  }),
  'Mutation.rejectReviewTask': () => ({
    run: (as) =>
      gql('mutation($t: ID!) { rejectReviewTask(taskId: $t, reason: "hijacked") { provenanceId } }', { t: fx.b.taskId }, as),
    check: refused,
  }),
  'Mutation.setHitlPolicy': () => ({
    run: (as) =>
      gql('mutation { setHitlPolicy(featureKey: "portal.triage", mode: "optional") { policyId tenantId mode } }', {}, as),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.setHitlPolicy, answer.text).toMatchObject({ tenantId: A, mode: 'optional' });
      expect(answer.json.data.setHitlPolicy.policyId).not.toBe(fx.b.policyId);
    },
  }),
  'Mutation.recordLegacyLatencySamples': () => ({
    run: (as) => gql('mutation { recordLegacyLatencySamples(featureKey: "portal.triage", samples: [100]) }', {}, as),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.recordLegacyLatencySamples, answer.text).toBe(1);
    },
  }),
  'Query.quotaSettings': () => ({
    run: (as) => gql('{ quotaSettings { enabled requestsPerMinute tokensPerDay etag } }', {}, as),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.quotaSettings?.requestsPerMinute, answer.text).not.toBe(B_QUOTA.requestsPerMinute);
    },
  }),
  'Mutation.setQuotaSettings': () => ({
    run: (as) =>
      counted(
        graphqlRequest(
          `${running.system.baseUrl}/graphql`,
          {
            query:
              'mutation($input: QuotaSettingsInput!) { setQuotaSettings(input: $input) { enabled requestsPerMinute tokensPerDay } }',
            variables: { input: A_QUOTA },
          },
          { ...authHeaders(as), 'idempotency-key': newUlid(), 'if-match': '*' },
        ),
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.setQuotaSettings, answer.text).toEqual(A_QUOTA);
    },
  }),
  // The platform's own rules: A runs them with platform.admin (the strongest token) and still
  // reaches nothing of B's: the global mutations find global rules only.
  'Query.globalRoutingRules': () => ({
    run: async (as) =>
      gql('{ globalRoutingRules { ruleId tenantId versions { primary { model } } } }', {}, as ?? (await platformA())),
    check: listWithout('globalRoutingRules', 'ruleId', () => [fx.b.ruleId]),
  }),
  'Mutation.createGlobalRoutingRule': () => ({
    run: async (as) =>
      gql(
        'mutation($input: CreateRoutingRuleInput!) { createGlobalRoutingRule(input: $input) { ruleId tenantId } }',
        { input: { featureKey: 'iso.platform_probe', primary: { provider: 'mock', model: 'platform' }, fallbacks: [] } },
        as ?? (await platformA()),
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.json.data?.createGlobalRoutingRule, answer.text).toMatchObject({ tenantId: null });
    },
  }),
  'Mutation.updateGlobalRoutingRule': () => ({
    run: async (as) =>
      gql(
        'mutation($id: ID!, $input: UpdateRoutingRuleInput!) { updateGlobalRoutingRule(ruleId: $id, input: $input) { ruleId } }',
        { id: fx.b.ruleId, input: { primary: { provider: 'mock', model: 'hijack' }, fallbacks: [] } },
        as ?? (await platformA()),
      ),
    check: refused,
  }),
  'Mutation.activateGlobalRoutingRuleVersion': () => ({
    run: async (as) =>
      gql(
        'mutation($id: ID!) { activateGlobalRoutingRuleVersion(ruleId: $id, version: 1) { ruleId } }',
        { id: fx.b.ruleId },
        as ?? (await platformA()),
      ),
    check: refused,
  }),
  'Mutation.publishTaxonomy': () => ({
    run: (as) =>
      gql(
        'mutation($input: PublishTaxonomyInput!) { publishTaxonomy(input: $input) { taxonomyId version nodes { path } } }',
        {
          input: { namespace: 'skills', expectedVersion: 0, diff: { added: [{ path: 'a-root', label: { en: 'A' } }] } },
        },
        as,
      ),
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
    run: (as) => rest('GET', '/api/v1/courses?limit=100', undefined, as),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.status).toBe(200);
      expect(answer.json.items.map((c: { courseId: string }) => c.courseId)).not.toContain(fx.b.courseId);
    },
  }),
  'courses.get': () => ({ run: (as) => rest('GET', `/api/v1/courses/${fx.b.courseId}`, undefined, as), check: restNotFound }),
  'courses.update': () => ({
    run: (as) => rest('PATCH', `/api/v1/courses/${fx.b.courseId}`, { tags: ['hijacked'] }, as, { 'if-match': '*' }),
    check: restNotFound,
  }),
  'ai.assist': () => ({
    run: (as) =>
      rest(
        'POST',
        '/v1/ai/assist',
        {
          featureKey: 'portal.triage',
          variables: { message: 'iso' },
          context: { facilityId: 'fac-a', specialty: 'gp' },
        },
        as,
      ),
    check: async (answer, what) => {
      noLeak(answer, what);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.json.template.templateId).not.toBe(fx.b.templateId);
      expect((await running.db.prisma.aIProvenance.findUnique({ where: { id: answer.json.provenanceId } }))?.tenantId).toBe(A);
    },
  }),
  'ai.provenance.get': () => ({
    run: (as) => rest('GET', `/v1/ai/provenance/${fx.b.provenanceId}`, undefined, as),
    check: restNotFound,
  }),
  'ai.provenance.receipt': () => ({
    run: (as) => rest('GET', `/v1/ai/provenance/${fx.b.provenanceId}/receipt`, undefined, as),
    check: restNotFound,
  }),
  'ai.receipts.export': () => ({
    run: (as) => {
      const from = new Date(Date.now() - 86_400_000).toISOString();
      const to = new Date(Date.now() + 86_400_000).toISOString();
      return rest('GET', `/v1/ai/receipts/export?from=${from}&to=${to}`, undefined, as);
    },
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.text, what).not.toContain(fx.b.provenanceId);
    },
  }),
  'ai.receipts.jwks': () => ({
    // Public: public keys only, no tenant's data.
    run: () => counted(exchange(`${running.system.baseUrl}/v1/ai/receipts/jwks.json`)),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.status).toBe(200);
      expect(answer.text, what).not.toContain('"d":');
    },
  }),
  'ai.quota.get': () => ({
    run: (as) => rest('GET', '/v1/admin/quota', undefined, as),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.json.requestsPerMinute).not.toBe(B_QUOTA.requestsPerMinute);
    },
  }),
  'ai.quota.put': () => ({
    run: (as) => rest('PUT', '/v1/admin/quota', A_QUOTA, as, { 'if-match': '*' }),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.json).toMatchObject(A_QUOTA);
    },
  }),
  'ai.routing-rules.create': () => ({
    run: (as) =>
      rest(
        'POST',
        '/v1/admin/routing-rules',
        {
          featureKey: 'virtual_care.soap_scaffold',
          primary: { provider: 'mock', model: 'a' },
          fallbacks: [],
        },
        as,
      ),
    check: (answer, what) => {
      noLeak(answer, what);
      expect(answer.status, answer.text).toBe(201);
      expect(answer.json.tenantId).toBe(A);
    },
  }),
  'ai.routing-rules.get': () => ({
    run: (as) => rest('GET', `/v1/admin/routing-rules/${fx.b.ruleId}`, undefined, as),
    check: restNotFound,
  }),
  'catalog.dlq.replay': () => ({
    run: (as) => rest('POST', '/admin/v1/catalog/dlq/replay', { eventIds: [fx.b.deadLetterEventId] }, as),
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

/** `_entities` of ENTITIES[key] on its subgraph, called directly (as A unless another caller is given). */
function resolveEntity(key: string, entity = ENTITIES[key](), as?: Caller): Promise<HttpAnswer> {
  const [graph, type] = key.split('.');
  const url = graph === 'AI' ? running.aiUrl : running.catalogUrl;
  const query = `query($r: [_Any!]!) { _entities(representations: $r) { ... on ${type} { ${entity.selection} } } }`;
  return gql(query, { r: [{ __typename: type, ...entity.representation }] }, as, url);
}

/** Catalog consumer (durable) → events of tenant A that name B's things. */
const CONSUMERS: Record<string, () => Promise<void>> = {
  [CATALOG_DURABLES.playPackageBuilt]: async () => {
    // A's envelope carrying B's tenant in the payload: refused (dead-lettered), nothing written.
    const crossed = consumedEnvelope('built', builtPayload(B, fx.b.slug, '9.9.9', { title: { en: 'hijack' } }), { tenantId: A });
    await publishEvent(crossed);
    await eventually(
      defined(async () => ((await deadLetterOf(crossed.eventId)) ? true : undefined)),
      'the crossed built event to be dead-lettered',
      { intervalMs: 100 },
    );
    // A's own package with B's slug: A gets a course of its own; B's course gets no version.
    const own = consumedEnvelope('built', builtPayload(A, fx.b.slug, '1.0.0', { title: { en: 'A package' } }));
    await publishEvent(own);
    const course = await eventually(
      defined(() =>
        running.db.prisma.course
          .findFirst({ where: { tenantId: A, slug: fx.b.slug }, include: { versions: true } })
          .then((c) => (c?.versions.length ? c : undefined)),
      ),
      "A's course with B's slug",
      { intervalMs: 100 },
    );
    expect(course.id).not.toBe(fx.b.courseId);
  },
  [CATALOG_DURABLES.courseDraftPublished]: async () => {
    const crossed = consumedEnvelope('draft', draftPayload(B, fx.b.slug, { title: { en: 'hijack' }, tags: ['hijack'] }), {
      tenantId: A,
    });
    await publishEvent(crossed);
    await eventually(
      defined(async () => ((await deadLetterOf(crossed.eventId)) ? true : undefined)),
      'the crossed draft to be dead-lettered',
      { intervalMs: 100 },
    );
    const own = consumedEnvelope('draft', draftPayload(A, 'iso-a-draft-only', { title: { en: 'A draft' } }));
    await publishEvent(own);
    await eventually(
      defined(() =>
        running.db.prisma.course.findFirst({ where: { tenantId: A, slug: 'iso-a-draft-only' } }).then((c) => c ?? undefined),
      ),
      "A's draft course",
      { intervalMs: 100 },
    );
  },
  [CATALOG_DURABLES.gdprSubjectRequest]: async () => {
    // A erases a user who authors courses in both tenants: only A's course is redacted.
    const request = consumedEnvelope('gdpr', gdprPayload(A, fx.b.author, 'erasure'));
    await publishEvent(request);
    await eventually(
      defined(() =>
        running.db.prisma.course
          .findUnique({ where: { id: fx.a.courseId } })
          .then((c) => (JSON.stringify(c?.authors).includes('[redacted]') ? c : undefined)),
      ),
      "A's course redacted",
      { intervalMs: 100 },
    );
  },
};

// ------------------------------------------------------------------------------ the scope matrix

const ALL_SCOPES = ['catalog.read', 'catalog.admin', 'ai.assist', 'ai.review', 'ai.admin', 'ai.audit', 'platform.admin'];
const CATALOG_READ = ['catalog.read', 'catalog.admin'];
const CATALOG_ADMIN = ['catalog.admin'];
const AI_ADMIN = ['ai.admin'];
const AI_ASSIST = ['ai.assist'];
const AI_REVIEW = ['ai.review'];
const REVIEW_READ = ['ai.review', 'ai.admin'];
const PROVENANCE_READ = ['ai.assist', 'ai.review', 'ai.admin', 'ai.audit'];
const AI_AUDIT = ['ai.audit'];
const PLATFORM_ADMIN = ['platform.admin'];

/**
 * Query.<field> and Mutation.<field> → the scopes any one of which opens it: the decision table of
 * docs/rest-compat.md ("Scopes"), written out here rather than imported from the subgraphs so that
 * a resolver which drops, narrows or widens its check fails.
 */
const OPERATION_SCOPES: Record<string, string[]> = {
  'Query.course': CATALOG_READ,
  'Query.courses': CATALOG_READ,
  'Query.courseVersions': CATALOG_READ,
  'Query.courseVersion': CATALOG_READ,
  'Query.taxonomy': CATALOG_READ,
  'Query.provenance': PROVENANCE_READ,
  'Query.routingRules': AI_ADMIN,
  'Query.routingRule': AI_ADMIN,
  'Query.promptTemplates': AI_ADMIN,
  'Query.promptTemplate': AI_ADMIN,
  'Query.hitlPolicies': AI_ADMIN,
  'Query.dataProtectionAssessments': AI_ADMIN,
  'Query.featureFlags': AI_ADMIN,
  'Query.featureFlagChanges': AI_ADMIN,
  'Query.providerKeyRetention': AI_ADMIN,
  'Query.reviewQueues': REVIEW_READ,
  'Query.reviewTasks': REVIEW_READ,
  'Query.reviewTask': REVIEW_READ,
  'Query.shadowParity': ['ai.assist', 'ai.admin'],
  'Query.provenanceReceiptExport': AI_AUDIT,
  'Mutation.rotateReceiptSigningKey': PLATFORM_ADMIN,
  'Mutation.updateCourseMetadata': CATALOG_ADMIN,
  'Mutation.changeCourseVisibility': CATALOG_ADMIN,
  'Mutation.archiveCourse': CATALOG_ADMIN,
  'Mutation.deprecateCourseVersion': CATALOG_ADMIN,
  'Mutation.withdrawCourseVersion': CATALOG_ADMIN,
  'Mutation.replayDeadLetters': CATALOG_ADMIN,
  'Mutation.publishTaxonomy': CATALOG_ADMIN,
  'Mutation.assist': AI_ASSIST,
  'Mutation.recordLegacyLatencySamples': AI_ASSIST,
  'Mutation.claimReviewTask': AI_REVIEW,
  'Mutation.releaseReviewTask': AI_REVIEW,
  'Mutation.approveReviewTask': AI_REVIEW,
  'Mutation.approveReviewTaskWithEdits': AI_REVIEW,
  'Mutation.rejectReviewTask': AI_REVIEW,
  'Mutation.createRoutingRule': AI_ADMIN,
  'Mutation.updateRoutingRule': AI_ADMIN,
  'Mutation.activateRoutingRuleVersion': AI_ADMIN,
  'Mutation.assignOnPremRouting': AI_ADMIN,
  'Mutation.recordDataProtectionAssessment': AI_ADMIN,
  'Mutation.publishPromptTemplate': AI_ADMIN,
  'Mutation.activatePromptTemplateVersion': AI_ADMIN,
  'Mutation.setHitlPolicy': AI_ADMIN,
  'Mutation.backfillLegacyProvenance': AI_ADMIN,
  'Mutation.setFeatureFlag': AI_ADMIN,
  'Mutation.recordConsumerCutover': AI_ADMIN,
  'Mutation.retireProviderKey': AI_ADMIN,
  'Mutation.createReviewQueue': AI_ADMIN,
  'Mutation.updateReviewQueue': AI_ADMIN,
  'Mutation.routeReviewTask': AI_ADMIN,
  'Query.quotaSettings': AI_ADMIN,
  'Mutation.setQuotaSettings': AI_ADMIN,
  'Query.globalRoutingRules': PLATFORM_ADMIN,
  'Mutation.createGlobalRoutingRule': PLATFORM_ADMIN,
  'Mutation.updateGlobalRoutingRule': PLATFORM_ADMIN,
  'Mutation.activateGlobalRoutingRuleVersion': PLATFORM_ADMIN,
};

/** REST route id → the scopes of the one operation it runs ('public': no token at all). */
const REST_SCOPES: Record<string, string[] | 'public'> = {
  'courses.list': CATALOG_READ,
  'courses.get': CATALOG_READ,
  'courses.update': CATALOG_ADMIN,
  'ai.assist': AI_ASSIST,
  'ai.provenance.get': PROVENANCE_READ,
  'ai.provenance.receipt': AI_AUDIT,
  'ai.receipts.export': AI_AUDIT,
  'ai.receipts.jwks': 'public',
  'ai.routing-rules.create': AI_ADMIN,
  'ai.routing-rules.get': AI_ADMIN,
  'ai.quota.get': AI_ADMIN,
  'ai.quota.put': AI_ADMIN,
  'catalog.dlq.replay': CATALOG_ADMIN,
  'ai.health': 'public',
};

/** `<graph>.<Type>` → the scopes that open its entity resolution (and the fields ENTITIES selects). */
const ENTITY_SCOPES: Record<string, string[]> = {
  'AI.AIProvenance': PROVENANCE_READ,
  // The AI subgraph's Course only echoes the key; what it adds is aiProvenance.
  'AI.Course': PROVENANCE_READ,
  'AI.HITLPolicy': AI_ADMIN,
  'AI.PromptTemplate': AI_ADMIN,
  'AI.ProviderRoutingRule': AI_ADMIN,
  'CATALOG.Course': CATALOG_READ,
  'CATALOG.CourseVersion': CATALOG_READ,
  'CATALOG.Taxonomy': CATALOG_READ,
};

const scopedTokens = new Map<string, Promise<string>>();

/** A caller of tenant A holding exactly `scopes` (tokens minted once per scope set). */
function callerWith(scopes: string[]): Promise<Caller> {
  const key = [...scopes].sort().join(' ');
  if (!scopedTokens.has(key)) scopedTokens.set(key, running.system.mintToken(A, key, { subject: 'svc:a' }));
  return scopedTokens.get(key)!.then((token) => ({ token, tenantId: A }));
}

/** A caller of tenant A with every scope, platform.admin included: the platform operator at its strongest. */
function platformA(): Promise<Caller> {
  return callerWith(ALL_SCOPES);
}

/** Every scope but the accepted ones: the strongest token that must still be refused. */
const allBut = (accepted: string[]) => ALL_SCOPES.filter((scope) => !accepted.includes(scope));

/** Refused for scope, naming exactly the accepted scopes; GraphQL in `errors`, REST as a problem. */
function refusedForScope(answer: HttpAnswer, accepted: string[], what: string, door: 'graphql' | 'rest') {
  noLeak(answer, what);
  const problem = door === 'graphql' ? answer.json.errors?.[0]?.extensions : answer.json;
  if (door === 'rest') expect(answer.status, `${what}: ${answer.text}`).toBe(403);
  expect(problem, `${what}: ${answer.text}`).toMatchObject({ code: 'authz.scope_missing', status: 403 });
  expect([...problem.acceptedScopes].sort(), what).toEqual([...accepted].sort());
}

/** Whatever else the answer is (null, request.not_found, request.conflict, a result), it is not a scope refusal. */
function notRefusedForScope(answer: HttpAnswer, what: string, door: 'graphql' | 'rest') {
  noLeak(answer, what);
  const codes =
    door === 'graphql'
      ? (answer.json.errors ?? []).map((e: { extensions?: { code?: string } }) => e.extensions?.code)
      : answer.status >= 400
        ? [answer.json?.code]
        : [];
  expect(codes, `${what}: ${answer.text}`).not.toContain('authz.scope_missing');
  expect(codes, `${what}: ${answer.text}`).not.toContain('UNAUTHENTICATED');
}

/** Each accepted scope on its own, as [case, scope] rows. */
const eachAccepted = (table: Record<string, string[] | 'public'>, keys: string[]) =>
  keys.flatMap((key) => {
    const accepted = table[key];
    return accepted === 'public' || !accepted ? [] : accepted.map((scope) => [key, scope] as const);
  });

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
    // The scope matrix: every operation, route and entity type states the scopes that open it.
    expect(rootFields.filter((f) => !OPERATION_SCOPES[f])).toEqual([]);
    expect(ROUTES.map((r) => r.id).filter((id) => !REST_SCOPES[id])).toEqual([]);
    expect(entityKeys.filter((k) => !ENTITY_SCOPES[k])).toEqual([]);
    // No stale cases either: each case names something that exists.
    expect(Object.keys(OPERATIONS).filter((f) => !rootFields.includes(f))).toEqual([]);
    expect(Object.keys(ENTITIES).filter((k) => !entityKeys.includes(k))).toEqual([]);
    expect(Object.keys(OPERATION_SCOPES).filter((f) => !rootFields.includes(f))).toEqual([]);
    expect(Object.keys(REST_SCOPES).filter((id) => !ROUTES.some((r) => r.id === id))).toEqual([]);
    expect(Object.keys(ENTITY_SCOPES).filter((k) => !entityKeys.includes(k))).toEqual([]);
    // Every scope set names real scopes and leaves at least one scope out (else nothing is refused).
    for (const accepted of [...Object.values(OPERATION_SCOPES), ...Object.values(ENTITY_SCOPES)]) {
      expect(accepted.every((scope) => ALL_SCOPES.includes(scope))).toBe(true);
      expect(allBut(accepted).length).toBeGreaterThan(0);
    }
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
        eventually(
          defined(() =>
            prisma.course
              .findFirst({ where: { tenantId, slug }, include: { versions: true } })
              .then((c) => (c?.versions.length ? c : undefined)),
          ),
          `the course ${slug}`,
          { intervalMs: 100 },
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
    const quota = await rest('PUT', '/v1/admin/quota', B_QUOTA, 'B', { 'if-match': '*' });
    expect(quota.status, quota.text).toBe(200);

    // B's dead letter: a built event with a label that is not major.minor.patch.
    const invalid = consumedEnvelope('built', builtPayload(B, fx.b.slug, '1.0.0'));
    (invalid.payload as Record<string, unknown>).versionLabel = 'v-not-semver';
    fx.b.deadLetterEventId = invalid.eventId;
    await publishEvent(invalid);
    await eventually(
      defined(async () => ((await deadLetterOf(invalid.eventId)) ? true : undefined)),
      "B's dead letter",
      { intervalMs: 100 },
    );
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
    const entity = ENTITIES[key]();
    const answer = await resolveEntity(key, entity);
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

  // The scope matrix runs after the isolation cases (its accepted-scope calls really run A's
  // mutations) and before the snapshot, which so also proves they changed nothing of B's.
  it.each(rootFields)('%s: a token with every scope but the accepted ones is refused with authz.scope_missing', async (field) => {
    const accepted = OPERATION_SCOPES[field];
    refusedForScope(await OPERATIONS[field]().run(await callerWith(allBut(accepted))), accepted, field, 'graphql');
  });

  it.each(eachAccepted(OPERATION_SCOPES, rootFields))('%s: scope %s alone is not refused for scope', async (field, scope) => {
    notRefusedForScope(await OPERATIONS[field]().run(await callerWith([scope])), `${field} with ${scope}`, 'graphql');
  });

  it.each(ROUTES.map((r) => r.id))('REST %s: refused with 403 authz.scope_missing without an accepted scope', async (id) => {
    const accepted = REST_SCOPES[id];
    if (accepted === 'public') {
      // No token at all, and still answered.
      expect((await REST[id]().run()).status).toBe(200);
      return;
    }
    refusedForScope(await REST[id]().run(await callerWith(allBut(accepted))), accepted, id, 'rest');
  });

  it.each(
    eachAccepted(
      REST_SCOPES,
      ROUTES.map((r) => r.id),
    ),
  )('REST %s: scope %s alone is not refused for scope', async (id, scope) => {
    notRefusedForScope(await REST[id]().run(await callerWith([scope])), `${id} with ${scope}`, 'rest');
  });

  it.each(entityKeys)('_entities of %s, called directly, without an accepted scope: authz.scope_missing', async (key) => {
    const accepted = ENTITY_SCOPES[key];
    refusedForScope(await resolveEntity(key, undefined, await callerWith(allBut(accepted))), accepted, key, 'graphql');
  });

  it.each(eachAccepted(ENTITY_SCOPES, entityKeys))(
    '_entities of %s with scope %s alone: not refused for scope',
    async (key, scope) => {
      notRefusedForScope(await resolveEntity(key, undefined, await callerWith([scope])), `${key} with ${scope}`, 'graphql');
    },
  );

  it('reviewTasks(unrouted: true) needs ai.admin: a reviewer (ai.review) is refused, naming it', async () => {
    const query = '{ reviewTasks(unrouted: true) { taskId } }';
    refusedForScope(await gql(query, {}, await callerWith(['ai.review'])), ['ai.admin'], 'unrouted as a reviewer', 'graphql');
    notRefusedForScope(await gql(query, {}, await callerWith(['ai.admin'])), 'unrouted as an admin', 'graphql');
  });

  it('after all of the above, every row and dead letter of B is unchanged', async () => {
    expect(await snapshotOfB()).toBe(before);
  });
});
