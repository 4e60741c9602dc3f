import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decideRoute,
  residenciesToAssess,
  tenantResidencies,
  type ResidencyRequest,
  type RouteDecision,
} from '../../../subgraphs/ai/routing/residency.logic.js';
import {
  servesResidency,
  type ProviderProfile,
  type RuleCandidate,
  type Target,
} from '../../../subgraphs/ai/routing/routing.logic.js';

const TENANT = 'ten_01JD0000000000000000000A00';
const OTHER = 'ten_01JD0000000000000000000B00';
const NOTE = 'patient_chart.note_summary';
const TRIAGE = 'portal.triage';

const hosted: Target = { provider: 'openai-compatible', model: 'gpt-4o-mini' };
const onPrem: Target = { provider: 'on-prem', model: 'llama-clinic' };
const mock: Target = { provider: 'mock', model: 'mock-1' };

/** The configured providers, with the residencies of the defaults (MOCK_RESIDENCIES '*', OPENAI_RESIDENCIES none). */
const PROVIDERS = new Map<string, ProviderProfile>([
  ['openai-compatible', { name: 'openai-compatible', residencies: [] }],
  ['on-prem', { name: 'on-prem', residencies: ['ON_PREM'] }],
  ['azure-openai', { name: 'azure-openai', residencies: ['AF'] }],
  ['mock', { name: 'mock', residencies: ['*'] }],
]);

let seq = 0;
function rule(tenantId: string | null, featureKey: string | null, residency: string | null, chain: Target[]): RuleCandidate {
  seq++;
  return {
    ruleId: `rtr_${String(seq).padStart(26, '0')}`,
    tenantId,
    featureKey,
    residency,
    activeVersion: 1,
    primary: chain[0],
    fallbacks: chain.slice(1),
  };
}

type Chain = 'hosted, on-prem' | 'on-prem, hosted' | 'hosted only' | 'hosted, mock';
const CHAINS: Record<Chain, Target[]> = {
  'hosted, on-prem': [hosted, onPrem],
  'on-prem, hosted': [onPrem, hosted],
  'hosted only': [hosted],
  'hosted, mock': [hosted, mock],
};

/**
 * The tenant's mapping: the tenant-wide residency rule assignOnPremRouting (or an admin) writes,
 * and the assessments on file. The mapping rule carries the chain under test, as the global rule
 * does, so the chain decides the attempts whichever of the two routes.
 */
type Mapping = 'none' | 'ON_PREM' | 'AF assessed' | 'AF not assessed' | 'AF assessment only';
const MAPPINGS: Record<Mapping, { residency: string | null; assessed: string[] }> = {
  none: { residency: null, assessed: [] },
  ON_PREM: { residency: 'ON_PREM', assessed: ['ON_PREM'] },
  'AF assessed': { residency: 'AF', assessed: ['AF'] },
  // A mapping written before assessments were required (or imported): the tenant's requests go nowhere.
  'AF not assessed': { residency: 'AF', assessed: [] },
  'AF assessment only': { residency: null, assessed: ['AF'] },
};

type Requested = null | 'AF' | 'ON_PREM' | 'EU';
type Outcome = { residency: string | null; source: 'tenant' | 'request' | 'none' } | { refused: string };

/** Where each (mapping, requested residency) may go, as docs/ai-gateway.md "Residency" states it. */
const WHERE: Record<Mapping, Record<string, Outcome>> = {
  none: {
    none: { residency: null, source: 'none' },
    AF: { refused: 'routing.assessment_required' },
    ON_PREM: { residency: 'ON_PREM', source: 'request' },
    EU: { residency: 'EU', source: 'request' },
  },
  ON_PREM: {
    none: { residency: 'ON_PREM', source: 'tenant' },
    AF: { refused: 'routing.residency_not_allowed' },
    ON_PREM: { residency: 'ON_PREM', source: 'tenant' },
    EU: { refused: 'routing.residency_not_allowed' },
  },
  'AF assessed': {
    none: { residency: 'AF', source: 'tenant' },
    AF: { residency: 'AF', source: 'tenant' },
    ON_PREM: { refused: 'routing.residency_not_allowed' },
    EU: { refused: 'routing.residency_not_allowed' },
  },
  'AF not assessed': {
    none: { refused: 'routing.assessment_required' },
    AF: { refused: 'routing.assessment_required' },
    ON_PREM: { refused: 'routing.residency_not_allowed' },
    EU: { refused: 'routing.residency_not_allowed' },
  },
  'AF assessment only': {
    none: { residency: null, source: 'none' },
    AF: { residency: 'AF', source: 'request' },
    ON_PREM: { residency: 'ON_PREM', source: 'request' },
    EU: { residency: 'EU', source: 'request' },
  },
};

/**
 * Which steps of each chain a residency keeps: mock's '*' covers AF and EU but not ON_PREM, the
 * hosted provider serves no residency, on-prem only ON_PREM.
 */
const KEPT: Record<Chain, Record<string, string[]>> = {
  'hosted, on-prem': { none: ['openai-compatible', 'on-prem'], AF: [], ON_PREM: ['on-prem'], EU: [] },
  'on-prem, hosted': { none: ['on-prem', 'openai-compatible'], AF: [], ON_PREM: ['on-prem'], EU: [] },
  'hosted only': { none: ['openai-compatible'], AF: [], ON_PREM: [], EU: [] },
  'hosted, mock': { none: ['openai-compatible', 'mock'], AF: ['mock'], ON_PREM: [], EU: ['mock'] },
};

function scenario(mapping: Mapping, requested: Requested, feature: string, chain: Chain): ResidencyRequest {
  const { residency, assessed } = MAPPINGS[mapping];
  const rules = [
    rule(null, null, null, CHAINS[chain]),
    // Another tenant's on-prem mapping says nothing about this tenant.
    rule(OTHER, null, 'ON_PREM', [onPrem]),
    // Note summaries of this tenant had a hosted-only override before any mapping.
    rule(TENANT, NOTE, null, [hosted]),
  ];
  if (residency) rules.push(rule(TENANT, null, residency, CHAINS[chain]));
  return {
    tenantId: TENANT,
    featureKey: feature,
    requested,
    rules,
    assessmentResidencies: ['AF'],
    assessed: new Set(assessed),
    providers: PROVIDERS,
    fallbacksEnabled: true,
  };
}

const code = (decision: RouteDecision) => (decision.ok ? undefined : decision.error.code);
const providers = (decision: RouteDecision) => (decision.ok ? decision.targets.map((t) => t.provider) : undefined);

describe('residency by construction: mapping × requested residency × feature × fallback chain', () => {
  const rows = (Object.keys(MAPPINGS) as Mapping[]).flatMap((mapping) =>
    ([null, 'AF', 'ON_PREM', 'EU'] as Requested[]).flatMap((requested) =>
      [NOTE, TRIAGE].flatMap((feature) =>
        (Object.keys(CHAINS) as Chain[]).map((chain) => [mapping, requested, feature, chain] as const),
      ),
    ),
  );

  it.each(rows)('%s tenant, requested %s, %s, chain [%s]', (mapping, requested, feature, chain) => {
    const decision = decideRoute(scenario(mapping, requested, feature, chain));
    const where = WHERE[mapping][requested ?? 'none'];
    if ('refused' in where) {
      expect(code(decision)).toBe(where.refused);
      return;
    }
    expect(decision.residency).toBe(where.residency);
    expect(decision.source).toBe(where.source);
    if (where.residency === null && feature === NOTE) {
      // No residency in play: the tenant's note-summary override routes, as before.
      expect(providers(decision)).toEqual(['openai-compatible']);
      return;
    }
    const kept = KEPT[chain][where.residency ?? 'none'];
    if (kept.length > 0) {
      expect(providers(decision)).toEqual(kept);
    } else {
      // Nothing in the residency: refused, never sent elsewhere. Whose residency it was picks the code.
      expect(code(decision)).toBe(
        where.source === 'tenant' ? 'routing.residency_unavailable' : 'routing.no_provider_for_residency',
      );
      expect(decision.ok ? [] : decision.skipped.length).toBeGreaterThan(0);
    }
  });

  it('the measured defect: an on-prem tenant request without residency never reaches the hosted global rule', () => {
    const request = scenario('none', null, NOTE, 'hosted, mock');
    // As assignOnPremRouting maps it: a tenant-wide ON_PREM rule, on-prem alone.
    const decision = decideRoute({ ...request, rules: [...request.rules, rule(TENANT, null, 'ON_PREM', [onPrem])] });
    expect(decision).toMatchObject({ ok: true, residency: 'ON_PREM', source: 'tenant', targets: [onPrem] });
    // The hosted-only note override was passed over, and it is on record.
    expect(decision.skipped).toEqual([{ ...hosted, reason: 'residency' }]);
  });

  it('refuses an on-prem tenant whose on-prem provider is not configured here (503), and says which residency', () => {
    const request = scenario('ON_PREM', null, TRIAGE, 'on-prem, hosted');
    const decision = decideRoute({ ...request, providers: new Map([...PROVIDERS].filter(([name]) => name !== 'on-prem')) });
    expect(decision.ok).toBe(false);
    if (decision.ok) return;
    expect(decision.error).toMatchObject({
      code: 'routing.residency_unavailable',
      status: 503,
      details: { residency: 'ON_PREM' },
    });
    expect(decision.skipped).toEqual([
      { ...onPrem, reason: 'not_configured' },
      { ...hosted, reason: 'residency' },
    ]);
  });

  it('names the allowed residencies when a request asks for another', () => {
    const decision = decideRoute(scenario('ON_PREM', 'AF', TRIAGE, 'on-prem, hosted'));
    expect(decision.ok ? null : decision.error).toMatchObject({
      code: 'routing.residency_not_allowed',
      status: 422,
      details: { residency: 'AF', allowed: ['ON_PREM'] },
    });
  });

  it('with multi-provider off, keeps the primary only: an out-of-residency primary is not replaced by a fallback of the same rule', () => {
    const request = { ...scenario('ON_PREM', null, TRIAGE, 'hosted, on-prem'), fallbacksEnabled: false };
    expect(code(decideRoute(request))).toBe('routing.residency_unavailable');
    const onPremFirst = { ...scenario('ON_PREM', null, TRIAGE, 'on-prem, hosted'), fallbacksEnabled: false };
    expect(providers(decideRoute(onPremFirst))).toEqual(['on-prem']);
  });
});

describe('tenant residencies', () => {
  it('come from active tenant-wide residency rules; ON_PREM excludes every other', () => {
    const rules = [
      rule(TENANT, null, 'AF', [mock]),
      rule(TENANT, NOTE, 'EU', [mock]),
      rule(null, null, 'EU', [mock]),
      { ...rule(TENANT, null, 'EU', [mock]), activeVersion: null },
    ];
    expect(tenantResidencies(rules, TENANT)).toEqual(['AF']);
    expect(tenantResidencies([...rules, rule(TENANT, null, 'ON_PREM', [onPrem])], TENANT)).toEqual(['ON_PREM']);
    expect(tenantResidencies(rules, OTHER)).toEqual([]);
  });

  it('asks for the assessments of the residencies in play only', () => {
    const rules = [rule(TENANT, null, 'AF', [mock])];
    const facts = { tenantId: TENANT, rules, assessmentResidencies: ['AF'] };
    expect(residenciesToAssess({ ...facts, requested: null })).toEqual(['AF']);
    expect(residenciesToAssess({ ...facts, rules: [], requested: 'EU' })).toEqual([]);
  });

  it('refuses a request without residency from a tenant mapped to several, rather than pick one', () => {
    const mapped = scenario('AF assessed', null, TRIAGE, 'hosted, mock');
    const request = { ...mapped, rules: [...mapped.rules, rule(TENANT, null, 'EU', [mock])] };
    expect(code(decideRoute(request))).toBe('routing.residency_not_allowed');
    expect(providers(decideRoute({ ...request, requested: 'EU' }))).toEqual(['mock']);
  });

  it("'*' serves every residency but ON_PREM, which a provider must name", () => {
    expect(servesResidency({ residencies: ['*'] }, 'AF')).toBe(true);
    expect(servesResidency({ residencies: ['*'] }, 'ON_PREM')).toBe(false);
    expect(servesResidency({ residencies: ['*', 'ON_PREM'] }, 'ON_PREM')).toBe(true);
    expect(servesResidency({ residencies: [] }, null)).toBe(true);
  });
});

describe('residency property', () => {
  const residency = fc.constantFrom('AF', 'ON_PREM', 'EU');
  const providerNames = ['openai-compatible', 'on-prem', 'azure-openai', 'mock', 'bedrock'];
  const target = fc.record({ provider: fc.constantFrom(...providerNames), model: fc.constantFrom('m1', 'm2') });
  const candidate = fc.record({
    tenantId: fc.constantFrom(TENANT, OTHER, null),
    featureKey: fc.constantFrom(NOTE, TRIAGE, null),
    residency: fc.option(residency, { nil: null }),
    activeVersion: fc.constantFrom(1, 2, null),
    primary: target,
    fallbacks: fc.array(target, { maxLength: 4 }),
  });
  const profiles = fc
    .record({
      'openai-compatible': fc.subarray(['*', 'AF', 'EU', 'ON_PREM']),
      'on-prem': fc.subarray(['ON_PREM', '*']),
      'azure-openai': fc.subarray(['AF', 'EU']),
      mock: fc.subarray(['*', 'EU', 'ON_PREM']),
    })
    .map((lists) => new Map(Object.entries(lists).map(([name, residencies]) => [name, { name, residencies }])));
  const request = fc.record({
    requested: fc.option(residency, { nil: null }),
    featureKey: fc.constantFrom(NOTE, TRIAGE),
    rules: fc.array(candidate, { maxLength: 8 }).map((rules) => rules.map((r, i) => ({ ...r, ruleId: `rtr_${i}` }))),
    assessmentResidencies: fc.subarray(['AF', 'ON_PREM']),
    assessed: fc.subarray(['AF', 'ON_PREM', 'EU']).map((list) => new Set(list)),
    providers: profiles,
    fallbacksEnabled: fc.boolean(),
  });

  it("every attempted provider serves the request's residency, which is within the tenant's allowed set", () => {
    fc.assert(
      fc.property(request, (input) => {
        const decision = decideRoute({ tenantId: TENANT, ...input });
        if (!decision.ok) return;
        const mapped = tenantResidencies(input.rules, TENANT);
        if (mapped.length > 0) expect(mapped).toContain(decision.residency);
        else expect(decision.residency).toBe(input.requested);
        if (decision.residency !== null && input.assessmentResidencies.includes(decision.residency)) {
          expect(input.assessed.has(decision.residency)).toBe(true);
        }
        for (const step of decision.targets) {
          const profile = input.providers.get(step.provider);
          expect(profile, step.provider).toBeDefined();
          expect(servesResidency(profile!, decision.residency)).toBe(true);
          // An on-prem tenant's text goes only to a provider that names ON_PREM.
          if (mapped.includes('ON_PREM')) expect(profile!.residencies).toContain('ON_PREM');
        }
        // The attempts come from the rule that routes, in its order.
        const chain = [decision.rule.primary, ...(input.fallbacksEnabled ? (decision.rule.fallbacks ?? []) : [])];
        expect(decision.targets).toEqual(chain.filter((step) => decision.targets.includes(step)));
      }),
      { numRuns: 500 },
    );
  });
});
