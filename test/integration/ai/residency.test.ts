import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../../support/database.js';
import { realService } from '../../support/services.js';
import {
  ASSIST,
  assistInput,
  startAiHarness,
  startFakeOpenAi,
  startFakeVault,
  type AiHarness,
  type FakeOpenAi,
} from './support.js';

realService('DATABASE_URL');

/**
 * Residency by construction, end to end: real assist requests through the AI subgraph, three stub
 * providers on loopback (hosted, on-prem, regional AF), and for each combination of the tenant's
 * mapping, the requested residency and the feature, which stub actually received the prompt and
 * with which key — or the refusal's code, with no stub reached.
 */

const VAULT_TOKEN = 'hvs.RESIDENCY-TEST';
const HOSTED_KEY = 'sk-hosted-3c1f';
const ONPREM_KEY = 'sk-onprem-9a2b';
const AF_KEY = 'az-af-77d0';
const ADMIN = 'usr_01JD00000000000000000ADM00';
const NOTE = 'patient_chart.note_summary';
const TRIAGE = 'portal.triage';
const CLINICAL = 'Clinic note 4471: HbA1c 9.2, started metformin';

/** Tenants, one per mapping under test. */
const T = {
  none: 'ten_01JD0000000000000000000N00',
  onPrem: 'ten_01JD00000000000000000P0M00',
  af: 'ten_01JD0000000000000000000AF0',
  afNotAssessed: 'ten_01JD00000000000000000AFN00',
  // ON_PREM tenants whose mapping rule an admin later gave other chains.
  onPremHostedFirst: 'ten_01JD00000000000000000PH000',
  onPremHostedOnly: 'ten_01JD00000000000000000P0H00',
} as const;
type Mapping = keyof typeof T;

type Stub = 'hosted' | 'on-prem' | 'af';
type Expected = { stub: Stub | 'mock' } | { refused: string };

/** Which stub each (mapping, requested residency) reaches, for both features. */
const TABLE: Record<Mapping, Record<'none' | 'AF' | 'ON_PREM' | 'EU', Expected>> = {
  none: {
    none: { stub: 'hosted' },
    AF: { refused: 'routing.assessment_required' },
    ON_PREM: { refused: 'routing.no_provider_for_residency' },
    // Only the in-process mock ('*') serves EU here: no stub sees it.
    EU: { stub: 'mock' },
  },
  onPrem: {
    none: { stub: 'on-prem' },
    AF: { refused: 'routing.residency_not_allowed' },
    ON_PREM: { stub: 'on-prem' },
    EU: { refused: 'routing.residency_not_allowed' },
  },
  af: {
    none: { stub: 'af' },
    AF: { stub: 'af' },
    ON_PREM: { refused: 'routing.residency_not_allowed' },
    EU: { refused: 'routing.residency_not_allowed' },
  },
  afNotAssessed: {
    none: { refused: 'routing.assessment_required' },
    AF: { refused: 'routing.assessment_required' },
    ON_PREM: { refused: 'routing.residency_not_allowed' },
    EU: { refused: 'routing.residency_not_allowed' },
  },
  // Mapping rule [hosted, on-prem]: the hosted primary is skipped, never called.
  onPremHostedFirst: {
    none: { stub: 'on-prem' },
    AF: { refused: 'routing.residency_not_allowed' },
    ON_PREM: { stub: 'on-prem' },
    EU: { refused: 'routing.residency_not_allowed' },
  },
  // Mapping rule [hosted]: no allowed step anywhere; refused rather than sent to the global rule.
  onPremHostedOnly: {
    none: { refused: 'routing.residency_unavailable' },
    AF: { refused: 'routing.residency_not_allowed' },
    ON_PREM: { refused: 'routing.residency_unavailable' },
    EU: { refused: 'routing.residency_not_allowed' },
  },
};

type GqlError = { message: string; extensions?: Record<string, unknown> };
type AssistData = { assist: { provenanceId: string; status: string; provider: string | null } | null };

describe.each(databaseKinds())('residency by construction on %s', (kind) => {
  let ai: AiHarness;
  let vault: Awaited<ReturnType<typeof startFakeVault>>;
  const stubs = {} as Record<Stub, FakeOpenAi>;

  const admin = (tenantId: string) => ({ tenantId, scope: 'ai.admin', sub: ADMIN });
  const gqlOk = async <D>(
    query: string,
    variables: Record<string, unknown>,
    tenantId: string,
    headers?: Record<string, string>,
  ) => {
    const result = await ai.gql<D>(query, variables, { ...admin(tenantId), headers });
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    return result.data!;
  };
  const assess = (tenantId: string, residency: string) =>
    gqlOk(
      `mutation($input: DataProtectionAssessmentInput!) { recordDataProtectionAssessment(input: $input) { assessmentId } }`,
      {
        input: {
          residency,
          signedBy: ADMIN,
          signedAt: new Date(Date.now() - 60_000).toISOString(),
          documentHash: 'cd'.repeat(32),
        },
      },
      tenantId,
    );
  const mapOnPrem = async (tenantId: string) => {
    await assess(tenantId, 'ON_PREM');
    const data = await gqlOk<{ assignOnPremRouting: { ruleId: string; etag: string } }>(
      `mutation { assignOnPremRouting { ruleId etag } }`,
      {},
      tenantId,
    );
    return data.assignOnPremRouting;
  };
  // A versioned write: If-Match with the rule's etag, as every client sends it.
  const rechain = (tenantId: string, rule: { ruleId: string; etag: string }, chain: string[]) => {
    const target = (provider: string) => ({ provider, model: provider === 'on-prem' ? 'llama-clinic' : 'gpt-4o-mini' });
    return gqlOk(
      `mutation($id: ID!, $input: UpdateRoutingRuleInput!) { updateRoutingRule(ruleId: $id, input: $input) { activeVersion } }`,
      { id: rule.ruleId, input: { primary: target(chain[0]), fallbacks: chain.slice(1).map(target) } },
      tenantId,
      { 'if-match': rule.etag },
    );
  };

  beforeAll(async () => {
    stubs.hosted = await startFakeOpenAi();
    stubs['on-prem'] = await startFakeOpenAi();
    stubs.af = await startFakeOpenAi();
    vault = await startFakeVault(VAULT_TOKEN, {
      'ai/providers/openai-compatible': { api_key: HOSTED_KEY },
      'ai/providers/on-prem': { api_key: ONPREM_KEY },
      'ai/providers/azure-openai': { api_key: AF_KEY },
    });
    ai = await startAiHarness(kind, {
      OPENAI_BASE_URL: stubs.hosted.baseUrl,
      ONPREM_BASE_URL: stubs['on-prem'].baseUrl,
      ONPREM_KEY_PATH: 'ai/providers/on-prem',
      ONPREM_MODEL: 'llama-clinic',
      AZURE_OPENAI_ENDPOINT: stubs.af.url,
      VAULT_ADDR: vault.url,
      VAULT_TOKEN,
      AI_PROVIDER_RETRIES: '0',
      // MOCK_RESIDENCIES is left at its default, '*': it must not satisfy ON_PREM.
    });
    // The seeded global rule (phase 0) routes every tenant to the hosted provider, mock as fallback.
    await mapOnPrem(T.onPrem);
    // The tenant routed note summaries to the hosted provider before it was mapped: the mapping wins.
    await gqlOk(
      `mutation { createRoutingRule(input: { featureKey: "${NOTE}", primary: { provider: "openai-compatible", model: "gpt-4o-mini" }, fallbacks: [] }) { ruleId } }`,
      {},
      T.onPrem,
    );
    await rechain(T.onPremHostedFirst, await mapOnPrem(T.onPremHostedFirst), ['openai-compatible', 'on-prem']);
    await rechain(T.onPremHostedOnly, await mapOnPrem(T.onPremHostedOnly), ['openai-compatible']);
    await assess(T.af, 'AF');
    await gqlOk(
      `mutation { createRoutingRule(input: { residency: "AF", primary: { provider: "azure-openai", model: "af-deployment" }, fallbacks: [{ provider: "mock", model: "mock-1" }] }) { ruleId } }`,
      {},
      T.af,
    );
    // A tenant-wide AF mapping written before assessments were required: its tenant has none.
    await ai.db.prisma.providerRoutingRule.create({
      data: {
        id: 'rtr_01JD000000000000000000AFN0',
        tenantId: T.afNotAssessed,
        residency: 'AF',
        activeVersion: 1,
        versions: {
          create: {
            version: 1,
            primary: { provider: 'azure-openai', model: 'af-deployment' },
            fallbacks: [],
            createdBy: 'legacy',
          },
        },
      },
    });
  });
  afterAll(async () => {
    await ai?.close();
    await vault?.close();
    for (const stub of Object.values(stubs)) await stub?.close();
  });

  const rows = (Object.keys(TABLE) as Mapping[]).flatMap((mapping) =>
    (['none', 'AF', 'ON_PREM', 'EU'] as const).flatMap((requested) =>
      [NOTE, TRIAGE].map((feature) => [mapping, requested, feature] as const),
    ),
  );

  it.each(rows)('%s tenant, residency %s, %s', async (mapping, requested, feature) => {
    const before = Object.fromEntries((Object.keys(stubs) as Stub[]).map((name) => [name, stubs[name].requests.length]));
    const variables = feature === NOTE ? { note: CLINICAL } : { message: CLINICAL };
    const result = await ai.gql<AssistData>(
      ASSIST,
      assistInput(feature, variables, requested === 'none' ? {} : { residency: requested }),
      { tenantId: T[mapping], scope: 'ai.assist' },
    );
    const received = (Object.keys(stubs) as Stub[]).flatMap((name) =>
      stubs[name].requests.slice(before[name]).map((request) => ({ name, request })),
    );
    const expected = TABLE[mapping][requested];

    if ('refused' in expected) {
      const error = (result.errors as GqlError[] | undefined)?.[0];
      expect(error?.extensions?.code, result.raw).toBe(expected.refused);
      expect(received.map((r) => r.name)).toEqual([]);
      // Recorded as other refusals are: a provenance row with the code, nothing answered.
      const row = await ai.db.prisma.aIProvenance.findUniqueOrThrow({
        where: { id: error!.extensions!.provenanceId as string },
      });
      expect(row.errorCode).toBe(expected.refused);
      expect(row.status).toBe(expected.refused === 'routing.residency_unavailable' ? 'failed' : 'rejected');
      expect(row.provider).toBeNull();
      return;
    }

    // Which host received the prompt comes first: it is the fact this test is about.
    expect(received.map((r) => r.name)).toEqual(expected.stub === 'mock' ? [] : [expected.stub]);
    expect(result.errors, result.raw).toBeUndefined();
    expect(result.data!.assist!.provider).toBe(
      { hosted: 'openai-compatible', 'on-prem': 'on-prem', af: 'azure-openai', mock: 'mock' }[expected.stub],
    );
    if (expected.stub === 'mock') return;
    const [{ request }] = received;
    expect(JSON.stringify(request.body)).toContain(CLINICAL);
    if (expected.stub === 'af') expect(request.headers['api-key']).toBe(AF_KEY);
    else expect(request.headers.authorization).toBe(`Bearer ${expected.stub === 'hosted' ? HOSTED_KEY : ONPREM_KEY}`);
  });

  it('never sends an on-prem tenant’s prompt or the hosted key to the hosted stub', () => {
    const onPremTenantsRequests = stubs.hosted.requests.filter((r) => JSON.stringify(r.body).includes(CLINICAL));
    // Only the unmapped tenant's requests without residency reached it (two features).
    expect(onPremTenantsRequests).toHaveLength(2);
    for (const request of stubs['on-prem'].requests) expect(request.headers.authorization).toBe(`Bearer ${ONPREM_KEY}`);
  });

  it('keeps an on-prem tenant on premises when its on-prem provider fails: no fallback to mock or hosted', async () => {
    const before = { hosted: stubs.hosted.requests.length, onPrem: stubs['on-prem'].requests.length };
    stubs['on-prem'].script.push({ status: 500, body: {} });
    const result = await ai.gql<AssistData>(ASSIST, assistInput(TRIAGE, { message: CLINICAL }), {
      tenantId: T.onPremHostedFirst,
      scope: 'ai.assist',
    });
    expect((result.errors as GqlError[])[0].extensions).toMatchObject({ code: 'provider.unavailable' });
    expect(stubs['on-prem'].requests.length - before.onPrem).toBe(1);
    expect(stubs.hosted.requests.length).toBe(before.hosted);
    const row = await ai.db.prisma.aIProvenance.findUniqueOrThrow({
      where: { id: (result.errors as GqlError[])[0].extensions!.provenanceId as string },
    });
    expect(row.residency).toBe('ON_PREM');
    expect((row.attempts as Array<{ provider: string; outcome: string }>).map((a) => [a.provider, a.outcome])).toEqual([
      ['openai-compatible', 'skipped_residency'],
      ['on-prem', 'server_error'],
    ]);
  });
});
