import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../../platform/ids.js';
import { databaseKinds } from '../../support/database.js';
import { ASSIST, assistInput, startAiHarness, type AiHarness } from './support.js';

/**
 * Keyed mutations on the AI subgraph itself, called without the gateway: the situation of a retry
 * whose gateway record was lost in a crash after the subgraph committed. The same Idempotency-Key
 * and arguments answer the first result without a second effect (counted in the database), other
 * arguments under the key are refused, and every keyed mutation that succeeded recorded its effect.
 */
describe.each(databaseKinds())('keyed AI mutations answer their recorded effect on %s', (kind) => {
  let ai: AiHarness;

  beforeAll(async () => {
    ai = await startAiHarness(kind, {});
  });
  afterAll(async () => {
    await ai?.close();
  });

  async function call(tenantId: string, key: string, query: string, variables: Record<string, unknown>) {
    const response = await fetch(ai.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${await ai.token(tenantId, 'ai.assist ai.admin', 'svc:keyed')}`,
        'x-tenant-id': tenantId,
        'idempotency-key': key,
      },
      body: JSON.stringify({ query, variables }),
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return (await response.json()) as { data?: Record<string, any>; errors?: Array<{ extensions?: { code?: string } }> };
  }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const withoutTimings = (answer: { data?: Record<string, any> }) => ({ ...answer.data?.assist, timings: undefined });
  const auditEvents = (tenantId: string, eventType: string) => ai.db.prisma.outboxEvent.count({ where: { tenantId, eventType } });

  const CREATE_RULE = `mutation Create($input: CreateRoutingRuleInput!) {
    createRoutingRule(input: $input) { ruleId activeVersion versions { version createdAt } }
  }`;
  const ruleInput = (model: string) => ({
    input: { featureKey: 'portal.triage', primary: { provider: 'mock', model }, fallbacks: [] },
  });

  it('createRoutingRule: the retry gets the created rule, not a request.conflict, and one audit event exists', async () => {
    const tenant = newId('tenant');
    const key = newUlid();
    const first = await call(tenant, key, CREATE_RULE, ruleInput('keyed'));
    expect(first.errors).toBeUndefined();
    const retry = await call(tenant, key, CREATE_RULE, ruleInput('keyed'));
    expect(retry).toEqual(first);
    expect(await ai.db.prisma.providerRoutingRule.count({ where: { tenantId: tenant } })).toBe(1);
    expect(await auditEvents(tenant, 'audit.ai.routing_rule_created')).toBe(1);
    // Without the key the same request is a new one, and the domain refuses it.
    const unkeyed = await call(tenant, newUlid(), CREATE_RULE, ruleInput('keyed'));
    expect(unkeyed.errors?.[0]?.extensions?.code).toBe('request.conflict');
  });

  it('other arguments under a used key are refused with idempotency.key_reused, with no effect', async () => {
    const tenant = newId('tenant');
    const key = newUlid();
    await call(tenant, key, CREATE_RULE, ruleInput('first'));
    const other = await call(tenant, key, CREATE_RULE, ruleInput('second'));
    expect(other.errors?.[0]?.extensions?.code).toBe('idempotency.key_reused');
    const versions = await ai.db.prisma.providerRoutingRuleVersion.findMany({ where: { rule: { tenantId: tenant } } });
    expect(versions.map((v) => (v.primary as { model: string }).model)).toEqual(['first']);
  });

  it('assist: the retry gets the same answer and provenance id; one provenance row', async () => {
    const tenant = newId('tenant');
    const key = newUlid();
    const marker = `fac-${newUlid()}`;
    const input = assistInput('portal.triage', { message: 'keyed' }, { context: { facilityId: marker, specialty: 'gp' } });
    const first = await call(tenant, key, ASSIST, input);
    expect(first.data?.assist?.status).toBe('completed');
    const retry = await call(tenant, key, ASSIST, input);
    // The recorded answer's timings are those known when it was written, before the live answer's.
    expect(withoutTimings(retry)).toEqual(withoutTimings(first));
    expect(retry.data?.assist?.timings.totalMs).toBeLessThanOrEqual(first.data?.assist?.timings.totalMs);
    expect(await ai.db.prisma.aIProvenance.count({ where: { tenantId: tenant, facilityId: marker } })).toBe(1);
  });

  it('assist: concurrent calls under one key (no gateway lease between them) leave one provenance row and one answer', async () => {
    const tenant = newId('tenant');
    const key = newUlid();
    const marker = `fac-${newUlid()}`;
    const input = assistInput('portal.triage', { message: 'raced' }, { context: { facilityId: marker, specialty: 'gp' } });
    const answers = await Promise.all(Array.from({ length: 6 }, () => call(tenant, key, ASSIST, input)));
    expect(answers[0].data?.assist?.status).toBe('completed');
    for (const answer of answers) expect(withoutTimings(answer)).toEqual(withoutTimings(answers[0]));
    expect(await ai.db.prisma.aIProvenance.count({ where: { tenantId: tenant, facilityId: marker } })).toBe(1);
    expect(await auditEvents(tenant, 'audit.ai.assist')).toBe(1);
  });

  it('publishPromptTemplate and setFeatureFlag: one version, one flag change, one audit event each', async () => {
    const tenant = newId('tenant');
    const publish = `mutation P($input: PublishPromptTemplateInput!) { publishPromptTemplate(input: $input) { templateId version hash } }`;
    const publishVars = { input: { featureKey: 'portal.triage', body: 'Triage: {{message}}' } };
    const key = newUlid();
    const first = await call(tenant, key, publish, publishVars);
    expect(first.errors).toBeUndefined();
    expect(await call(tenant, key, publish, publishVars)).toEqual(first);
    expect(await auditEvents(tenant, 'audit.ai.template_published')).toBe(1);

    const flag = `mutation F($input: SetFeatureFlagInput!) { setFeatureFlag(input: $input) { featureKey flag enabled } }`;
    const flagVars = { input: { featureKey: 'portal.triage', flag: 'hitl.enabled', enabled: false, reason: 'keyed test' } };
    const flagKey = newUlid();
    const set = await call(tenant, flagKey, flag, flagVars);
    expect(set.errors).toBeUndefined();
    expect(await call(tenant, flagKey, flag, flagVars)).toEqual(set);
    expect(await auditEvents(tenant, 'audit.ai.feature_flag_changed')).toBe(1);
  });

  it('two aliased calls in one keyed document are two effects; the retried document adds none', async () => {
    const tenant = newId('tenant');
    const doc = `mutation S($f: String!) {
      a: recordLegacyLatencySamples(featureKey: $f, samples: [10, 20])
      b: recordLegacyLatencySamples(featureKey: $f, samples: [10, 20])
    }`;
    const key = newUlid();
    const first = await call(tenant, key, doc, { f: 'portal.triage' });
    expect(first.data).toEqual({ a: 2, b: 2 });
    expect(await call(tenant, key, doc, { f: 'portal.triage' })).toEqual(first);
    expect(await ai.db.prisma.shadowLatencySample.count({ where: { tenantId: tenant } })).toBe(4);
  });

  it('no keyed mutation of this file completed without recording its effect', () => {
    expect(ai.logs.filter((line) => line.includes('idempotency.effect_unrecorded'))).toEqual([]);
  });
});
