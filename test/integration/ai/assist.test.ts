import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInProcessBus } from '../../../events/bus/in-process-bus.js';
import { createOutboxRelay } from '../../../events/publish/outbox-relay.js';
import { ensureStreams } from '../../../events/streams.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { BASELINE_TEMPLATES } from '../../../subgraphs/ai/baseline.js';
import { promptHash, renderTemplate } from '../../../subgraphs/ai/templates/template.logic.js';
import { databaseKinds } from '../../support/database.js';
import {
  ASSIST,
  assistInput,
  PROVENANCE,
  startAiHarness,
  startFakeOpenAi,
  startFakeVault,
  TENANT_A,
  TENANT_B,
  type AiHarness,
  type FakeOpenAi,
  type FakeReply,
} from './support.js';

const PROVIDER_KEY = 'sk-live-TOPSECRET-7f3a9c2e1b';
const VAULT_TOKEN = 'hvs.VAULT-ROOT-TOKEN-5d8e';
const NOTE = 'Patient reports chest pain since 2 days; BP 150/95.';
const noteSummary = (vars: Record<string, unknown> = { note: NOTE }, extra: Record<string, unknown> = {}) =>
  assistInput('patient_chart.note_summary', vars, extra);

type AssistData = {
  assist: {
    provenanceId: string;
    status: string;
    text: string | null;
    provider: string;
    model: string;
    template: { templateId: string; version: number; hash: string };
    timings: { totalMs: number; providerMs: number; queueMs: number };
    reviewState: string | null;
    outputHash: string;
  };
};
type Attempt = { provider: string; model: string; attempt: number; outcome: string; errorCode: string | null };
type ProvenanceData = { provenance: (Record<string, unknown> & { attempts: Attempt[] }) | null };

describe.each(databaseKinds())('assist pipeline on %s', (kind) => {
  let ai: AiHarness;
  let openai: FakeOpenAi;
  let vault: Awaited<ReturnType<typeof startFakeVault>>;

  beforeAll(async () => {
    openai = await startFakeOpenAi();
    vault = await startFakeVault(VAULT_TOKEN, { 'ai/providers/openai-compatible': { api_key: PROVIDER_KEY } });
    ai = await startAiHarness(kind, {
      OPENAI_BASE_URL: openai.baseUrl,
      // Long enough for a loaded 2-core machine (300 ms timed out a healthy answer under load); the
      // 'hang' replies still time out, at twice this per case.
      OPENAI_TIMEOUT_MS: '2000',
      OPENAI_RESIDENCIES: 'EU,AF',
      MOCK_RESIDENCIES: 'EU',
      MOCK_FAULT_INJECTION: 'true',
      VAULT_ADDR: vault.url,
      VAULT_TOKEN,
      AI_PROVIDER_RETRIES: '1',
      AI_RETRY_BASE_MS: '1',
      AI_RETRY_MAX_MS: '5',
      AI_RETRY_AFTER_MAX_MS: '1000',
      AI_BREAKER_FAILURES: '1000',
    });
    // The seeded global HITLPolicy holds every note summary for review (phase 2); these tests are
    // about routing and providers, so tenant A opts out. Review itself: governance.test.ts.
    await ai.db.prisma.hITLPolicy.create({
      data: {
        id: 'hip_01JD00000000000000000000AA',
        tenantId: TENANT_A,
        featureKey: 'patient_chart.note_summary',
        mode: 'optional',
        updatedBy: 'test',
      },
    });
  });
  afterAll(async () => {
    await ai?.close();
    await openai?.close();
    await vault?.close();
  });

  async function provenance(id: string, tenantId = TENANT_A) {
    const result = await ai.gql<ProvenanceData>(PROVENANCE, { id }, { tenantId });
    expect(result.errors).toBeUndefined();
    return result.data!.provenance;
  }

  it('completes through the hosted primary with the vault key, and records provenance and audit', async () => {
    const before = openai.requests.length;
    const result = await ai.gql<AssistData>(ASSIST, noteSummary());
    expect(result.errors).toBeUndefined();
    const out = result.data!.assist;
    expect(out.provenanceId).toMatch(/^prv_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(out).toMatchObject({
      status: 'completed',
      provider: 'openai-compatible',
      model: 'gpt-4o-mini-2026',
      reviewState: null,
    });
    expect(out.text).toMatch(/^hosted answer/);
    expect(out.timings.totalMs).toBeGreaterThanOrEqual(out.timings.providerMs);
    const call = openai.requests[before];
    expect(call.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    expect(call.body.model).toBe('gpt-4o-mini');

    const template = BASELINE_TEMPLATES.find((t) => t.featureKey === 'patient_chart.note_summary')!;
    const rendered = renderTemplate(template.body, { note: NOTE, locale: 'en' }, 100_000);
    expect(call.body.messages?.[0].content).toBe(rendered);
    const row = await provenance(out.provenanceId);
    expect(row).toMatchObject({
      provenanceId: out.provenanceId,
      tenantId: TENANT_A,
      actorType: 'service',
      actorId: 'svc-consumer',
      featureKey: 'patient_chart.note_summary',
      status: 'completed',
      mode: 'live',
      templateId: out.template.templateId,
      templateVersion: 1,
      templateHash: out.template.hash,
      renderedPromptHash: promptHash(rendered),
      provider: 'openai-compatible',
      model: 'gpt-4o-mini-2026',
      outputHash: out.outputHash,
      inputTokens: 12,
      outputTokens: 7,
      legacyBackfill: false,
      facilityId: 'fac-001',
      specialty: 'cardiology',
      errorCode: null,
    });
    expect(row!.ruleId).toMatch(/^rtr_/);
    expect(row!.attempts.map((a) => [a.provider, a.outcome])).toEqual([['openai-compatible', 'ok']]);

    // No patient text in the database row except where review needs it (not here).
    const stored = await ai.db.prisma.aIProvenance.findUniqueOrThrow({ where: { id: out.provenanceId } });
    expect(JSON.stringify(stored)).not.toContain('chest pain');
    expect(stored.heldText).toBeNull();

    const audit = await ai.db.prisma.outboxEvent.findFirstOrThrow({
      where: { eventType: 'audit.ai.assist', tenantId: TENANT_A },
      orderBy: { id: 'desc' },
    });
    expect(audit.subject).toBe('audit.ai.assist.v1');
    expect(audit.partitionKey).toBe(TENANT_A);
    const envelope = audit.envelope as {
      payload: { action: string; target: { id: string }; details: Record<string, unknown> };
      schemaUri: string;
      actor: unknown;
    };
    expect(envelope.payload).toMatchObject({
      action: 'assist',
      target: { id: out.provenanceId },
      details: { status: 'completed', templateHash: out.template.hash },
    });
    expect(envelope.schemaUri).toMatch(/^schemas:\/\/audit\/ai\/event\/v1#sha256-/);
    expect(JSON.stringify(envelope)).not.toContain('chest pain');
  });

  const fallbackCases: Array<[string, FakeReply[], string]> = [
    [
      'HTTP 500',
      [
        { status: 500, body: { error: { message: 'boom' } } },
        { status: 500, body: {} },
      ],
      '500',
    ],
    [
      'HTTP 429',
      [
        { status: 429, body: {}, headers: { 'retry-after': '0' } },
        { status: 429, body: {}, headers: { 'retry-after': '0' } },
      ],
      '429',
    ],
    ['a timeout', ['hang', 'hang'], 'timeout'],
  ];
  it.each(fallbackCases)('falls back to mock when the primary answers %s (after one retry)', async (_label, replies, code) => {
    const before = openai.requests.length;
    openai.script.push(...replies);
    const result = await ai.gql<AssistData>(ASSIST, noteSummary());
    expect(result.errors).toBeUndefined();
    expect(result.data!.assist).toMatchObject({ status: 'completed', provider: 'mock', model: 'mock-1' });
    expect(openai.requests.length - before).toBe(2);
    const row = await provenance(result.data!.assist.provenanceId);
    expect(row!.attempts.map((a) => [a.provider, a.attempt, a.errorCode ?? 'ok'])).toEqual([
      ['openai-compatible', 1, code],
      ['openai-compatible', 2, code],
      ['mock', 1, 'ok'],
    ]);
  });

  it('does not retry a 401 and falls back', async () => {
    const before = openai.requests.length;
    openai.script.push({ status: 401, body: { error: { message: `invalid key ${PROVIDER_KEY}` } } });
    const result = await ai.gql<AssistData>(ASSIST, noteSummary());
    expect(result.data!.assist.provider).toBe('mock');
    expect(openai.requests.length - before).toBe(1);
    const row = await provenance(result.data!.assist.provenanceId);
    expect(row!.attempts[0]).toMatchObject({ outcome: 'auth_error', errorCode: '401' });
  });

  it('refuses a missing template variable with BAD_USER_INPUT naming it, and still records provenance', async () => {
    const result = await ai.gql(ASSIST, noteSummary({ unrelated: 'x' }));
    const error = result.errors![0];
    expect(error.extensions).toMatchObject({ code: 'BAD_USER_INPUT', variable: 'note' });
    const id = error.extensions!.provenanceId as string;
    const row = await provenance(id);
    expect(row).toMatchObject({ status: 'rejected', errorCode: 'BAD_USER_INPUT', renderedPromptHash: null, attempts: [] });
  });

  it('fails with provider.unavailable (503) and a failed provenance row when every provider fails', async () => {
    const rule = await ai.gql<{ createRoutingRule: { ruleId: string } }>(
      `mutation { createRoutingRule(input: { featureKey: "virtual_care.soap_scaffold", primary: { provider: "mock", model: "mock-a" }, fallbacks: [{ provider: "mock", model: "mock-b" }] }) { ruleId } }`,
    );
    expect(rule.errors).toBeUndefined();
    const result = await ai.gql(
      ASSIST,
      assistInput('virtual_care.soap_scaffold', { transcript: 'visit', __mock: { status: 503 } }),
    );
    const error = result.errors![0];
    expect(error.extensions).toMatchObject({ code: 'provider.unavailable', status: 503 });
    const row = await provenance(error.extensions!.provenanceId as string);
    expect(row).toMatchObject({
      status: 'failed',
      errorCode: 'provider.unavailable',
      ruleId: rule.data!.createRoutingRule.ruleId,
      ruleVersion: 1,
      outputHash: null,
    });
    expect(row!.attempts.map((a) => [a.model, a.attempt, a.outcome])).toEqual([
      ['mock-a', 1, 'server_error'],
      ['mock-a', 2, 'server_error'],
      ['mock-b', 1, 'server_error'],
      ['mock-b', 2, 'server_error'],
    ]);
  });

  describe('residency', () => {
    it('needs a signed assessment for AF', async () => {
      const result = await ai.gql(ASSIST, noteSummary(undefined, { residency: 'AF' }), { tenantId: TENANT_B });
      expect(result.errors![0].extensions).toMatchObject({ code: 'routing.assessment_required', residency: 'AF' });
      expect(result.errors![0].extensions!.provenanceId).toMatch(/^prv_/);
    });

    it('never falls back across the residency boundary', async () => {
      await ai.db.prisma.dataProtectionAssessment.create({
        data: {
          id: 'dpa_01JD0000000000000000000000',
          tenantId: TENANT_A,
          residency: 'AF',
          signedBy: 'usr_01JD0000000000000000000000',
          signedAt: new Date(Date.now() - 60_000),
          documentHash: 'sha256:x',
        },
      });
      const created = await ai.gql<{ createRoutingRule: { ruleId: string; residency: string } }>(
        `mutation { createRoutingRule(input: { featureKey: "patient_chart.note_summary", residency: "AF", primary: { provider: "openai-compatible", model: "af-model" }, fallbacks: [{ provider: "mock", model: "mock-1" }] }) { ruleId residency } }`,
      );
      expect(created.errors).toBeUndefined();
      const ok = await ai.gql<AssistData>(ASSIST, noteSummary(undefined, { residency: 'AF' }));
      expect(ok.data!.assist).toMatchObject({ status: 'completed', provider: 'openai-compatible' });

      const before = openai.requests.length;
      openai.script.push({ status: 500, body: {} }, { status: 500, body: {} });
      const failed = await ai.gql(ASSIST, noteSummary(undefined, { residency: 'AF' }));
      expect(failed.errors![0].extensions).toMatchObject({ code: 'provider.unavailable' });
      expect(openai.requests.length - before).toBe(2);
      const row = await provenance(failed.errors![0].extensions!.provenanceId as string);
      expect(row!.residency).toBe('AF');
      expect(row!.ruleId).toBe(created.data!.createRoutingRule.ruleId);
      // mock (EU only) was passed over, never called.
      expect(row!.attempts.map((a) => [a.provider, a.outcome])).toEqual([
        ['mock', 'skipped_residency'],
        ['openai-compatible', 'server_error'],
        ['openai-compatible', 'server_error'],
      ]);
    });

    it('fails closed when no provider of the rule may serve the residency', async () => {
      const result = await ai.gql(ASSIST, noteSummary(undefined, { residency: 'ON_PREM' }));
      expect(result.errors![0].extensions).toMatchObject({
        code: 'routing.no_provider_for_residency',
        status: 422,
        residency: 'ON_PREM',
      });
      const row = await provenance(result.errors![0].extensions!.provenanceId as string);
      expect(row).toMatchObject({ status: 'rejected', errorCode: 'routing.no_provider_for_residency' });
      expect(row!.attempts.every((a) => a.outcome === 'skipped_residency')).toBe(true);
    });
  });

  describe('routing rules', () => {
    it('a tenant override wins only for its tenant, a feature rule over a tenant-wide one', async () => {
      const triage = assistInput('portal.triage', { message: 'I feel dizzy' });
      const byFeature = await ai.gql<{ createRoutingRule: { ruleId: string } }>(
        `mutation { createRoutingRule(input: { featureKey: "portal.triage", primary: { provider: "mock", model: "mock-triage" }, fallbacks: [] }) { ruleId } }`,
      );
      expect(byFeature.errors).toBeUndefined();
      const wide = await ai.gql(
        `mutation { createRoutingRule(input: { primary: { provider: "mock", model: "mock-wide" }, fallbacks: [] }) { ruleId tenantId featureKey activeVersion } }`,
      );
      expect(wide.data).toMatchObject({ createRoutingRule: { tenantId: TENANT_A, featureKey: null, activeVersion: 1 } });

      expect((await ai.gql<AssistData>(ASSIST, triage)).data!.assist.model).toBe('mock-triage');
      expect(
        (
          await ai.gql<AssistData>(
            ASSIST,
            assistInput('medication.reconciliation_assist', { home_medications: 'a', hospital_medications: 'b' }),
          )
        ).data!.assist.model,
      ).toBe('mock-wide');
      const other = await ai.gql<AssistData>(ASSIST, triage, { tenantId: TENANT_B });
      expect(other.data!.assist).toMatchObject({ provider: 'openai-compatible', model: 'gpt-4o-mini-2026' });
    });

    it('versions every change, rolls back by re-activation, and audits each change', async () => {
      const created = await ai.gql<{ createRoutingRule: { ruleId: string; etag: string } }>(
        `mutation { createRoutingRule(input: { featureKey: "medication.reconciliation_assist", primary: { provider: "mock", model: "v1-model" }, fallbacks: [] }) { ruleId etag } }`,
      );
      const ruleId = created.data!.createRoutingRule.ruleId;
      const ifMatch = (etag: string) => ({ headers: { 'if-match': etag } });
      const meds = assistInput('medication.reconciliation_assist', { home_medications: 'a', hospital_medications: 'b' });
      const updated = await ai.gql<{
        updateRoutingRule: {
          activeVersion: number;
          etag: string;
          versions: Array<{ version: number; primary: { model: string } }>;
        };
      }>(
        `mutation($id: ID!) { updateRoutingRule(ruleId: $id, input: { primary: { provider: "mock", model: "v2-model" }, fallbacks: [{ provider: "openai-compatible", model: "gpt-4o-mini" }], expectedActiveVersion: 1 }) { activeVersion etag versions { version primary { model } } } }`,
        { id: ruleId },
        ifMatch(created.data!.createRoutingRule.etag),
      );
      expect(updated.data!.updateRoutingRule.activeVersion).toBe(2);
      expect(updated.data!.updateRoutingRule.versions.map((v) => v.primary.model)).toEqual(['v1-model', 'v2-model']);
      const v2 = await ai.gql<AssistData>(ASSIST, meds);
      expect(v2.data!.assist.model).toBe('v2-model');
      expect((await provenance(v2.data!.assist.provenanceId))!.ruleVersion).toBe(2);

      // A current If-Match, but expectedActiveVersion says otherwise: refused as well.
      const stale = await ai.gql(
        `mutation($id: ID!) { updateRoutingRule(ruleId: $id, input: { primary: { provider: "mock", model: "x" }, fallbacks: [], expectedActiveVersion: 1 }) { activeVersion } }`,
        { id: ruleId },
        ifMatch(updated.data!.updateRoutingRule.etag),
      );
      expect(stale.errors![0].extensions!.code).toBe('request.precondition_failed');

      const rolledBack = await ai.gql<{ activateRoutingRuleVersion: { activeVersion: number; etag: string } }>(
        `mutation($id: ID!) { activateRoutingRuleVersion(ruleId: $id, version: 1) { activeVersion etag } }`,
        { id: ruleId },
        ifMatch(updated.data!.updateRoutingRule.etag),
      );
      expect(rolledBack.data!.activateRoutingRuleVersion.activeVersion).toBe(1);
      expect((await ai.gql<AssistData>(ASSIST, meds)).data!.assist.model).toBe('v1-model');
      const missing = await ai.gql(
        `mutation($id: ID!) { activateRoutingRuleVersion(ruleId: $id, version: 9) { activeVersion } }`,
        { id: ruleId },
        ifMatch(rolledBack.data!.activateRoutingRuleVersion.etag),
      );
      expect(missing.errors![0].extensions!.code).toBe('request.not_found');

      const events = await ai.db.prisma.outboxEvent.findMany({
        where: { tenantId: TENANT_A, eventType: { startsWith: 'audit.ai.routing_rule' } },
        orderBy: { id: 'asc' },
      });
      const forRule = events
        .filter((e) => (e.envelope as { payload: { target: { id: string } } }).payload.target.id === ruleId)
        .map((e) => e.subject);
      expect(forRule).toEqual([
        'audit.ai.routing_rule_created.v1',
        'audit.ai.routing_rule_updated.v1',
        'audit.ai.routing_rule_version_activated.v1',
      ]);
    });

    it('guards the admin mutations: scope, global rules, other tenants, unknown providers, duplicates', async () => {
      const noScope = await ai.gql(
        `mutation { createRoutingRule(input: { primary: { provider: "mock", model: "m" }, fallbacks: [] }) { ruleId } }`,
        {},
        { scope: 'ai.assist' },
      );
      expect(noScope.errors![0].extensions!.code).toBe('authz.scope_missing');

      const unknown = await ai.gql(
        `mutation { createRoutingRule(input: { featureKey: "portal.x", primary: { provider: "https://evil.example", model: "m" }, fallbacks: [] }) { ruleId } }`,
      );
      expect(unknown.errors![0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument: 'primary.provider' });

      const duplicate = await ai.gql(
        `mutation { createRoutingRule(input: { featureKey: "portal.triage", primary: { provider: "mock", model: "m" }, fallbacks: [] }) { ruleId } }`,
      );
      expect(duplicate.errors![0].extensions!.code).toBe('request.conflict');

      const rules = await ai.gql<{ routingRules: Array<{ ruleId: string; tenantId: string | null }> }>(
        `{ routingRules { ruleId tenantId } }`,
      );
      const global = rules.data!.routingRules.find((r) => r.tenantId === null)!;
      const own = rules.data!.routingRules.find((r) => r.tenantId === TENANT_A)!;
      const forbidden = await ai.gql(
        `mutation($id: ID!) { updateRoutingRule(ruleId: $id, input: { primary: { provider: "mock", model: "m" }, fallbacks: [] }) { ruleId } }`,
        { id: global.ruleId },
      );
      expect(forbidden.errors![0].extensions).toMatchObject({ code: 'routing.global_rule_forbidden', status: 403 });

      const crossTenant = await ai.gql(
        `mutation($id: ID!) { activateRoutingRuleVersion(ruleId: $id, version: 1) { ruleId } }`,
        { id: own.ruleId },
        { tenantId: TENANT_B },
      );
      expect(crossTenant.errors![0].extensions!.code).toBe('request.not_found');
      const seenByB = await ai.gql<{ routingRule: unknown }>(
        `query($id: ID!) { routingRule(ruleId: $id) { ruleId } }`,
        { id: own.ruleId },
        { tenantId: TENANT_B },
      );
      expect(seenByB.data!.routingRule).toBeNull();
    });
  });

  it("never shows tenant A's provenance to tenant B", async () => {
    const result = await ai.gql<AssistData>(ASSIST, noteSummary());
    const id = result.data!.assist.provenanceId;
    expect(await provenance(id, TENANT_B)).toBeNull();
    expect(await provenance(id, TENANT_A)).not.toBeNull();
  });

  it('refuses assist without the ai.assist scope', async () => {
    const result = await ai.gql(ASSIST, noteSummary(), { scope: 'ai.admin' });
    expect(result.errors![0].extensions!.code).toBe('authz.scope_missing');
  });

  describe('human review', () => {
    it('holds output for review when the policy requires it, then purges the text after its retention', async () => {
      await ai.db.prisma.hITLPolicy.create({
        data: {
          id: 'hip_01JD0000000000000000000000',
          tenantId: TENANT_B,
          featureKey: 'patient_chart.note_summary',
          mode: 'required',
          updatedBy: 'usr_01JD0000000000000000000000',
        },
      });
      const result = await ai.gql<AssistData>(ASSIST, noteSummary(), { tenantId: TENANT_B });
      expect(result.data!.assist).toMatchObject({ status: 'pending_review', text: null, reviewState: 'pending' });
      const id = result.data!.assist.provenanceId;
      const stored = await ai.db.prisma.aIProvenance.findUniqueOrThrow({ where: { id } });
      expect(stored.heldText).toMatch(/^hosted answer/);
      expect(stored.heldTextExpiresAt!.getTime() - stored.createdAt.getTime()).toBe(72 * 3_600_000);

      expect(await ai.services.purgeHeldText()).toBe(0);
      await ai.db.prisma.aIProvenance.update({ where: { id }, data: { heldTextExpiresAt: new Date(Date.now() - 1000) } });
      expect(await ai.services.purgeHeldText()).toBe(1);
      const purged = await ai.db.prisma.aIProvenance.findUniqueOrThrow({ where: { id } });
      expect(purged.heldText).toBeNull();
      expect(purged.outputHash).toBe(stored.outputHash);
    });

    it('releases unreviewed output when review is switched off by flag, and says so in the log', async () => {
      await ai.db.prisma.featureFlag.create({
        data: {
          tenantId: TENANT_B,
          featureKey: '*',
          flag: 'hitl.enabled',
          enabled: false,
          updatedBy: 'usr_01JD0000000000000000000000',
        },
      });
      const result = await ai.gql<AssistData>(ASSIST, noteSummary(), { tenantId: TENANT_B });
      expect(result.data!.assist).toMatchObject({ status: 'completed', reviewState: 'bypassed_by_flag' });
      expect(result.data!.assist.text).toBeTruthy();
      expect(
        ai.logs.some((line) => line.includes('ai.safety_control_bypassed') && line.includes(result.data!.assist.provenanceId)),
      ).toBe(true);
    });

    it('never returns shadow-mode text', async () => {
      const result = await ai.gql<AssistData>(ASSIST, noteSummary(undefined, { mode: 'shadow' }));
      expect(result.data!.assist).toMatchObject({ status: 'completed', text: null, mode: 'shadow' });
      expect((await provenance(result.data!.assist.provenanceId))!.mode).toBe('shadow');
    });
  });

  describe('templates', () => {
    it('publishes an immutable tenant version with its hash logged, used only by that tenant, with rollback', async () => {
      const publish = (body: string) =>
        ai.gql<{ publishPromptTemplate: { templateId: string; version: number; hash: string; tenantId: string } }>(
          `mutation($body: String!) { publishPromptTemplate(input: { featureKey: "virtual_care.soap_scaffold", body: $body }) { templateId version hash tenantId } }`,
          { body },
        );
      const v1 = (await publish('SOAP in {{locale}} for: {{transcript}}')).data!.publishPromptTemplate;
      const v2 = (await publish('SOAP (short) in {{locale}} for: {{transcript}}')).data!.publishPromptTemplate;
      expect([v1.version, v2.version, v1.tenantId]).toEqual([1, 2, TENANT_A]);
      expect(v1.hash).not.toBe(v2.hash);
      expect(ai.logs.some((line) => line.includes('prompt template published') && line.includes(v2.hash))).toBe(true);

      // Tenant A routes this feature to mock-a (rule created above); tenant B keeps the global template.
      const input = assistInput('virtual_care.soap_scaffold', { transcript: 'visit' });
      const b = (await ai.gql<AssistData>(ASSIST, input, { tenantId: TENANT_B })).data!.assist.template;
      expect(b.version).toBe(1);
      expect(b.templateId).not.toBe(v1.templateId);
      const a = (await ai.gql<AssistData>(ASSIST, input)).data!.assist;
      expect(a.template).toEqual({ templateId: v2.templateId, version: 2, hash: v2.hash });
      expect(await provenance(a.provenanceId)).toMatchObject({
        templateId: v2.templateId,
        templateHash: v2.hash,
        templateVersion: 2,
      });

      const rolled = await ai.gql<{ activatePromptTemplateVersion: { active: boolean; version: number } }>(
        `mutation($id: ID!) { activatePromptTemplateVersion(templateId: $id) { active version } }`,
        { id: v1.templateId },
      );
      expect(rolled.data!.activatePromptTemplateVersion).toEqual({ active: true, version: 1 });
      expect((await ai.gql<AssistData>(ASSIST, input)).data!.assist.template).toEqual({
        templateId: v1.templateId,
        version: 1,
        hash: v1.hash,
      });
      const versions = await ai.db.prisma.promptTemplate.findMany({
        where: { tenantId: TENANT_A, featureKey: 'virtual_care.soap_scaffold' },
        orderBy: { version: 'asc' },
      });
      expect(versions.map((v) => [v.version, v.active, v.hash])).toEqual([
        [1, true, v1.hash],
        [2, false, v2.hash],
      ]);

      const globalTemplate = await ai.db.prisma.promptTemplate.findFirstOrThrow({
        where: { tenantId: null, featureKey: 'virtual_care.soap_scaffold' },
      });
      const forbidden = await ai.gql(`mutation($id: ID!) { activatePromptTemplateVersion(templateId: $id) { version } }`, {
        id: globalTemplate.id,
      });
      expect(forbidden.errors![0].extensions!.code).toBe('FORBIDDEN');

      const bad = await publish('Hello {{ name');
      expect(bad.errors![0].extensions!.code).toBe('BAD_USER_INPUT');
    });
  });

  it('serves /v1/ai/health (and /health) with per-dependency detail', async () => {
    for (const path of ['/v1/ai/health', '/health']) {
      const response = await fetch(new URL(path, ai.url));
      expect(response.status).toBe(200);
      const body = (await response.json()) as {
        service: string;
        dependencies: {
          database: { status: string };
          quota: { store: string };
          vault: { kind: string; status: string };
          providers: Array<{ name: string; circuit: string }>;
        };
      };
      expect(body.service).toBe('ai');
      expect(body.dependencies.database.status).toBe('up');
      expect(body.dependencies.quota.store).toBe('memory');
      expect(body.dependencies.vault).toMatchObject({ kind: 'vault', status: 'up' });
      expect(body.dependencies.providers.map((p) => p.name).sort()).toEqual(['mock', 'openai-compatible']);
      expect(JSON.stringify(body)).not.toContain(PROVIDER_KEY);
    }
  });

  it('publishes the audit events through the outbox relay', async () => {
    const bus = createInProcessBus();
    await ensureStreams(bus, ai.config);
    const relay = createOutboxRelay({ db: ai.db.prisma, bus, logger: silentLogger });
    let run;
    do run = await relay.runOnce();
    while (run.published > 0);
    const messages = await bus.readStream(ai.config.events.auditStream);
    const subjects = new Set(messages.map((m) => m.subject));
    expect(subjects.has('audit.ai.assist.v1')).toBe(true);
    expect(subjects.has('audit.ai.routing_rule_created.v1')).toBe(true);
    expect(subjects.has('audit.ai.template_published.v1')).toBe(true);
    const provenanceRows = await ai.db.prisma.aIProvenance.count();
    const assistEvents = messages.filter((m) => m.subject === 'audit.ai.assist.v1').length;
    expect(assistEvents).toBe(provenanceRows);
    await bus.close();
  });

  it('never puts the provider key or vault token in a log line or a response', async () => {
    expect(ai.logs.length).toBeGreaterThan(10);
    expect(ai.responses.length).toBeGreaterThan(10);
    for (const secret of [PROVIDER_KEY, VAULT_TOKEN]) {
      expect(ai.logs.filter((line) => line.includes(secret))).toEqual([]);
      expect(ai.responses.filter((raw) => raw.includes(secret))).toEqual([]);
    }
    // The key did reach the provider, so the checks above looked at a run that used it.
    expect(openai.requests.some((r) => r.headers.authorization === `Bearer ${PROVIDER_KEY}`)).toBe(true);
  });
});
