import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../platform/ids.js';
import { databaseKinds } from '../../support/database.js';
import { ASSIST, assistInput, startAiHarness, TENANT_A, type AiHarness } from './support.js';

/**
 * Issue #25, item 5: what operators must change has an API. The global routing rules are versioned
 * and activatable with the platform scope (platform.admin), audited like tenant rules, so phase 3's
 * rollback ("routing rules are versioned") reaches the rule every tenant inherits; a tenant admin
 * cannot touch them. Per-tenant quota settings are read and replaced with ai.admin, under If-Match,
 * audited, and in force on the next request.
 */

// A frozen clock mid-minute: the quota test counts requests in one window.
const FROZEN = new Date('2026-11-21T10:15:30Z');
const OPERATOR = 'usr_01JD000000000000000PLATF00';
const platform = { scope: 'platform.admin', sub: OPERATOR };
const tenantAdmin = { scope: 'ai.admin ai.assist ai.review', sub: 'usr_01JD00000000000000000ADM00' };

type GqlError = { message: string; extensions?: Record<string, unknown> };
type Rule = {
  ruleId: string;
  etag: string;
  tenantId: string | null;
  activeVersion: number | null;
  versions: Array<{ version: number; primary: { provider: string; model: string }; createdBy: string }>;
};
type Quota = { enabled: boolean; requestsPerMinute: number; tokensPerDay: number; etag: string; updatedAt: string | null };

const RULE_FIELDS =
  'ruleId tenantId featureKey residency activeVersion etag versions { version primary { provider model } createdBy }';
const QUOTA_FIELDS = 'enabled requestsPerMinute tokensPerDay etag updatedAt';
const code = (errors: GqlError[] | undefined) => errors?.[0]?.extensions?.code;

describe.each(databaseKinds())('admin APIs for operators on %s', (kind) => {
  let ai: AiHarness;
  beforeAll(async () => {
    ai = await startAiHarness(kind, {}, { clock: { now: () => FROZEN } });
  });
  afterAll(async () => {
    await ai?.close();
  });

  const audits = async (eventType: string) =>
    (await ai.db.prisma.outboxEvent.findMany({ where: { eventType }, orderBy: { id: 'asc' } })).map(
      (row) => (row.envelope as { tenantId: string; payload: Record<string, unknown> }).payload,
    );

  describe('global routing rules (platform.admin)', () => {
    let global: Rule;

    it('lists the global rules to the platform scope only', async () => {
      const listed = await ai.gql<{ globalRoutingRules: Rule[] }>(`{ globalRoutingRules { ${RULE_FIELDS} } }`, {}, platform);
      expect(listed.errors).toBeUndefined();
      expect(listed.data!.globalRoutingRules.every((rule) => rule.tenantId === null)).toBe(true);
      global = listed.data!.globalRoutingRules.find((rule) => rule.activeVersion === 1)!;
      expect(global).toBeDefined();

      const refused = await ai.gql(`{ globalRoutingRules { ruleId } }`, {}, tenantAdmin);
      expect(refused.errors![0].extensions).toMatchObject({
        code: 'authz.scope_missing',
        status: 403,
        acceptedScopes: ['platform.admin'],
      });
    });

    it('versions the global rule and rolls it back, routing every tenant without an override accordingly, audited', async () => {
      const tenant = newId('tenant');
      const served = async () => {
        const result = await ai.gql<{ assist: { provider: string; model: string } }>(
          ASSIST,
          assistInput('portal.triage', { message: 'dizzy' }),
          { tenantId: tenant, scope: 'ai.assist' },
        );
        expect(result.errors, result.raw).toBeUndefined();
        return result.data!.assist.model;
      };
      const before = await served();

      const updated = await ai.gql<{ updateGlobalRoutingRule: Rule }>(
        `mutation($id: ID!) { updateGlobalRoutingRule(ruleId: $id, input: { primary: { provider: "mock", model: "platform-v2" }, fallbacks: [], expectedActiveVersion: 1 }) { ${RULE_FIELDS} } }`,
        { id: global.ruleId },
        { ...platform, headers: { 'if-match': global.etag } },
      );
      expect(updated.errors, updated.raw).toBeUndefined();
      expect(updated.data!.updateGlobalRoutingRule).toMatchObject({ tenantId: null, activeVersion: 2 });
      expect(updated.data!.updateGlobalRoutingRule.versions[1]).toMatchObject({ createdBy: OPERATOR });
      expect(await served()).toBe('platform-v2');

      const rolledBack = await ai.gql<{ activateGlobalRoutingRuleVersion: Rule }>(
        `mutation($id: ID!) { activateGlobalRoutingRuleVersion(ruleId: $id, version: 1) { ${RULE_FIELDS} } }`,
        { id: global.ruleId },
        { ...platform, headers: { 'if-match': updated.data!.updateGlobalRoutingRule.etag } },
      );
      expect(rolledBack.data!.activateGlobalRoutingRuleVersion.activeVersion).toBe(1);
      expect(await served()).toBe(before);

      const [change] = (await audits('audit.ai.global_routing_rule_updated')).filter(
        (p) => (p.target as { id: string }).id === global.ruleId,
      );
      expect(change).toMatchObject({
        action: 'global_routing_rule_updated',
        actor: { type: 'user', id: OPERATOR },
        target: { type: 'routing_rule', id: global.ruleId },
        details: { scope: 'global', activeVersion: 2, previousVersion: 1 },
      });
      const [rollback] = await audits('audit.ai.global_routing_rule_version_activated');
      expect(rollback).toMatchObject({ details: { scope: 'global', activeVersion: 1, previousVersion: 2 } });
    });

    it('creates a global rule; a second one for the same feature and residency is a conflict', async () => {
      const create = () =>
        ai.gql<{ createGlobalRoutingRule: Rule }>(
          `mutation { createGlobalRoutingRule(input: { featureKey: "radiology.pre_read", primary: { provider: "mock", model: "radiology" }, fallbacks: [] }) { ${RULE_FIELDS} } }`,
          {},
          platform,
        );
      const created = await create();
      expect(created.data!.createGlobalRoutingRule).toMatchObject({ tenantId: null, activeVersion: 1 });
      expect(code((await create()).errors)).toBe('request.conflict');
      expect(await audits('audit.ai.global_routing_rule_created')).toHaveLength(1);
    });

    it('a tenant admin cannot touch a global rule (403 with a stable code); the platform scope cannot reach a tenant rule', async () => {
      const viaGlobal = await ai.gql(
        `mutation($id: ID!) { activateGlobalRoutingRuleVersion(ruleId: $id, version: 2) { ruleId } }`,
        { id: global.ruleId },
        tenantAdmin,
      );
      expect(viaGlobal.errors![0].extensions).toMatchObject({ code: 'authz.scope_missing', status: 403 });
      for (const document of [
        `mutation($id: ID!) { updateRoutingRule(ruleId: $id, input: { primary: { provider: "mock", model: "mine" }, fallbacks: [] }) { ruleId } }`,
        `mutation($id: ID!) { activateRoutingRuleVersion(ruleId: $id, version: 2) { ruleId } }`,
      ]) {
        const refused = await ai.gql(document, { id: global.ruleId }, tenantAdmin);
        expect(refused.errors![0].extensions).toMatchObject({ code: 'routing.global_rule_forbidden', status: 403 });
      }
      expect((await ai.db.prisma.providerRoutingRule.findUniqueOrThrow({ where: { id: global.ruleId } })).activeVersion).toBe(1);

      const own = await ai.gql<{ createRoutingRule: Rule }>(
        `mutation { createRoutingRule(input: { featureKey: "portal.triage", primary: { provider: "mock", model: "own" }, fallbacks: [] }) { ruleId } }`,
        {},
        tenantAdmin,
      );
      const reached = await ai.gql(
        `mutation($id: ID!) { updateGlobalRoutingRule(ruleId: $id, input: { primary: { provider: "mock", model: "x" }, fallbacks: [] }) { ruleId } }`,
        { id: own.data!.createRoutingRule.ruleId },
        platform,
      );
      expect(code(reached.errors)).toBe('request.not_found');
    });
  });

  describe('per-tenant quota settings (ai.admin)', () => {
    const read = (tenantId = TENANT_A) =>
      ai.gql<{ quotaSettings: Quota }>(`{ quotaSettings { ${QUOTA_FIELDS} } }`, {}, { ...tenantAdmin, tenantId });
    const set = (input: Record<string, unknown>, ifMatch?: string, tenantId = TENANT_A) =>
      ai.gql<{ setQuotaSettings: Quota }>(
        `mutation($input: QuotaSettingsInput!) { setQuotaSettings(input: $input) { ${QUOTA_FIELDS} } }`,
        { input },
        { ...tenantAdmin, tenantId, headers: ifMatch === undefined ? {} : { 'if-match': ifMatch } },
      );

    it('reads the defaults, then replaces them under If-Match, audited with the previous values', async () => {
      const defaults = (await read()).data!.quotaSettings;
      expect(defaults).toMatchObject({ enabled: false, requestsPerMinute: 600, tokensPerDay: 2_000_000, updatedAt: null });

      const changed = await set({ enabled: true, requestsPerMinute: 120, tokensPerDay: 50_000 }, defaults.etag);
      expect(changed.errors, changed.raw).toBeUndefined();
      expect(changed.data!.setQuotaSettings).toMatchObject({ enabled: true, requestsPerMinute: 120, tokensPerDay: 50_000 });
      expect(changed.data!.setQuotaSettings.etag).not.toBe(defaults.etag);
      expect(changed.data!.setQuotaSettings.updatedAt).not.toBeNull();
      expect((await read()).data!.quotaSettings).toEqual(changed.data!.setQuotaSettings);

      const [audit] = await audits('audit.ai.quota_settings_changed');
      expect(audit).toMatchObject({
        action: 'quota_settings_changed',
        actor: { id: tenantAdmin.sub },
        target: { type: 'tenant_quota', id: TENANT_A },
        details: {
          enabled: true,
          requestsPerMinute: 120,
          tokensPerDay: 50_000,
          previous: { enabled: false, requestsPerMinute: 600, tokensPerDay: 2_000_000 },
        },
      });
    });

    it('refuses a write without If-Match (428), with a stale one (412), with bad amounts (400), and without ai.admin', async () => {
      const current = (await read()).data!.quotaSettings;
      const same = { enabled: true, requestsPerMinute: 7, tokensPerDay: 0 };
      expect((await set(same)).errors![0].extensions).toMatchObject({ code: 'request.precondition_required', status: 428 });
      expect((await set(same, '"stale"')).errors![0].extensions).toMatchObject({
        code: 'request.precondition_failed',
        status: 412,
        etag: current.etag,
      });
      for (const bad of [
        { ...same, requestsPerMinute: -1 },
        { ...same, requestsPerMinute: 1_000_001 },
      ]) {
        expect(code((await set(bad, '*')).errors)).toBe('BAD_USER_INPUT');
      }
      const assistOnly = await ai.gql(`{ quotaSettings { enabled } }`, {}, { scope: 'ai.assist' });
      expect(assistOnly.errors![0].extensions).toMatchObject({ code: 'authz.scope_missing', acceptedScopes: ['ai.admin'] });
      expect((await read()).data!.quotaSettings).toEqual(current);
    });

    it('puts the new amounts in force on the next request, and keeps tenants apart', async () => {
      const tenant = newId('tenant');
      const { etag } = (await read(tenant)).data!.quotaSettings;
      expect((await set({ enabled: true, requestsPerMinute: 1, tokensPerDay: 0 }, etag, tenant)).errors).toBeUndefined();
      const assist = () =>
        ai.gql<{ assist: { status: string } | null }>(ASSIST, assistInput('portal.triage', { message: 'x' }), {
          tenantId: tenant,
          scope: 'ai.assist',
        });
      expect((await assist()).data!.assist).toMatchObject({ status: 'completed' });
      expect(code((await assist()).errors)).toBe('quota.exceeded');
      // Tenant A's settings are its own.
      expect((await read()).data!.quotaSettings.requestsPerMinute).not.toBe(1);
    });
  });
});
