import { describe, expect, it } from 'vitest';
import { isAppError } from '../../../platform/errors/errors.js';
import {
  planAttempts,
  requiresAssessment,
  selectRule,
  specificity,
  validateFeatureKey,
  validateResidency,
  validateTargets,
  type ProviderProfile,
  type RuleCandidate,
} from '../../../subgraphs/ai/routing/routing.logic.js';

const A = 'ten_01JD0000000000000000000000';
const B = 'ten_01JD0000000000000000000001';
const FEATURE = 'patient_chart.note_summary';

function rule(
  id: string,
  tenantId: string | null,
  featureKey: string | null,
  residency: string | null,
  activeVersion: number | null = 1,
): RuleCandidate {
  return {
    ruleId: `rtr_${id.padStart(26, '0')}`,
    tenantId,
    featureKey,
    residency,
    activeVersion,
    primary: { provider: 'mock', model: id },
    fallbacks: [],
  };
}

const all = [
  rule('1', null, null, null),
  rule('2', null, FEATURE, null),
  rule('3', null, FEATURE, 'AF'),
  rule('4', A, null, null),
  rule('5', A, FEATURE, null),
  rule('6', A, FEATURE, 'AF'),
  rule('7', B, FEATURE, 'AF'),
];

function errorCode(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return isAppError(error) ? error.code : 'not an AppError';
  }
  return undefined;
}

describe('rule precedence', () => {
  it('orders tenant+feature+residency > tenant+feature > tenant > global', () => {
    expect(specificity(all[5])).toBeGreaterThan(specificity(all[4]));
    expect(specificity(all[4])).toBeGreaterThan(specificity(all[3]));
    expect(specificity(all[3])).toBeGreaterThan(specificity(all[2]));
    expect(specificity(all[2])).toBeGreaterThan(specificity(all[1]));
    expect(specificity(all[1])).toBeGreaterThan(specificity(all[0]));
  });

  it('picks the most specific rule that matches, level by level', () => {
    const pick = (rules: RuleCandidate[], tenantId: string, residency: string | null, featureKey = FEATURE) =>
      selectRule(rules, { tenantId, featureKey, residency })?.primary?.model;
    expect(pick(all, A, 'AF')).toBe('6');
    expect(pick(all, A, null)).toBe('5');
    expect(
      pick(
        all.filter((r) => r.primary?.model !== '5'),
        A,
        null,
      ),
    ).toBe('4');
    expect(pick(all, A, null, 'portal.triage')).toBe('4');
    expect(pick(all, B, null)).toBe('2');
    expect(pick(all, B, 'AF')).toBe('7');
    expect(pick(all, B, null, 'portal.triage')).toBe('1');
    expect(
      pick(
        all.filter((r) => r.tenantId === null),
        B,
        'AF',
      ),
    ).toBe('3');
  });

  it("never applies another tenant's override", () => {
    const onlyB = [rule('1', null, null, null), rule('9', B, null, null)];
    expect(selectRule(onlyB, { tenantId: A, featureKey: FEATURE, residency: null })?.primary?.model).toBe('1');
  });

  it('skips deactivated rules and residency rules for requests without that residency', () => {
    const rules = [rule('1', null, null, null), rule('5', A, FEATURE, null, null), rule('6', A, FEATURE, 'AF')];
    expect(selectRule(rules, { tenantId: A, featureKey: FEATURE, residency: null })?.primary?.model).toBe('1');
    expect(selectRule(rules, { tenantId: A, featureKey: FEATURE, residency: 'ON_PREM' })?.primary?.model).toBe('1');
    expect(selectRule([rule('6', A, FEATURE, 'AF')], { tenantId: A, featureKey: FEATURE, residency: null })).toBeUndefined();
  });

  it('breaks ties between equally specific rules by the newest id', () => {
    const rules = [rule('1', null, null, null), rule('2', null, null, null)];
    expect(selectRule(rules, { tenantId: A, featureKey: FEATURE, residency: null })?.primary?.model).toBe('2');
  });
});

describe('attempt plan and residency', () => {
  const profiles = new Map<string, ProviderProfile>([
    ['hosted-eu', { name: 'hosted-eu', residencies: ['EU'] }],
    ['hosted-af', { name: 'hosted-af', residencies: ['AF'] }],
    ['mock', { name: 'mock', residencies: ['*'] }],
    ['onprem', { name: 'onprem', residencies: ['ON_PREM'] }],
  ]);
  const version = {
    primary: { provider: 'hosted-af', model: 'm' },
    fallbacks: [
      { provider: 'hosted-eu', model: 'm' },
      { provider: 'unconfigured', model: 'm' },
      { provider: 'mock', model: 'mock-1' },
    ],
  };

  it('keeps only providers that may serve the residency, in order', () => {
    const plan = planAttempts(version, 'AF', profiles);
    expect(plan.targets.map((t) => t.provider)).toEqual(['hosted-af', 'mock']);
    expect(plan.skipped).toEqual([
      { provider: 'hosted-eu', model: 'm', reason: 'residency' },
      { provider: 'unconfigured', model: 'm', reason: 'not_configured' },
    ]);
  });

  it('keeps every configured provider when no residency is required', () => {
    expect(planAttempts(version, null, profiles).targets.map((t) => t.provider)).toEqual(['hosted-af', 'hosted-eu', 'mock']);
  });

  it('fails closed when no provider of the rule may serve the residency', () => {
    const plan = planAttempts(
      { primary: { provider: 'hosted-eu', model: 'm' }, fallbacks: [{ provider: 'hosted-af', model: 'm' }] },
      'ON_PREM',
      profiles,
    );
    expect(plan.targets).toEqual([]);
    expect(plan.skipped.map((t) => t.reason)).toEqual(['residency', 'residency']);
  });

  it('gates the configured residencies on an assessment', () => {
    expect(requiresAssessment('AF', ['AF'])).toBe(true);
    expect(requiresAssessment('ON_PREM', ['AF'])).toBe(false);
    expect(requiresAssessment(null, ['AF'])).toBe(false);
  });
});

describe('admin input validation', () => {
  const known = new Set(['mock', 'openai-compatible']);
  it('accepts known providers and refuses unknown ones, repeats and long chains', () => {
    expect(
      errorCode(() =>
        validateTargets({ provider: 'openai-compatible', model: 'gpt-4o-mini' }, [{ provider: 'mock', model: 'mock-1' }], known),
      ),
    ).toBeUndefined();
    expect(errorCode(() => validateTargets({ provider: 'evil', model: 'x' }, [], known))).toBe('BAD_USER_INPUT');
    expect(errorCode(() => validateTargets({ provider: 'mock', model: 'a' }, [{ provider: 'mock', model: 'a' }], known))).toBe(
      'BAD_USER_INPUT',
    );
    expect(errorCode(() => validateTargets({ provider: 'mock', model: 'http://x y' }, [], known))).toBe('BAD_USER_INPUT');
    const six = Array.from({ length: 6 }, (_, i) => ({ provider: 'mock', model: `m${i}` }));
    expect(errorCode(() => validateTargets({ provider: 'mock', model: 'a' }, six, known))).toBe('BAD_USER_INPUT');
  });

  it('validates feature keys and residency codes', () => {
    expect(validateFeatureKey('virtual_care.soap_scaffold')).toBe('virtual_care.soap_scaffold');
    expect(errorCode(() => validateFeatureKey('Portal Triage'))).toBe('BAD_USER_INPUT');
    expect(validateResidency('ON_PREM')).toBe('ON_PREM');
    expect(errorCode(() => validateResidency('af'))).toBe('BAD_USER_INPUT');
  });
});
