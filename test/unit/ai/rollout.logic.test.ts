import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors/errors.js';
import { validateAssessment } from '../../../subgraphs/ai/assessment/assessment.logic.js';
import { MAX_BACKFILL_ROWS, partitionBatch, type LegacyRowInput } from '../../../subgraphs/ai/backfill/backfill.logic.js';
import { flagValue, resolveFlag, validateFlagInput } from '../../../subgraphs/ai/flags/feature-flag.logic.js';
import { mayRetire, requireRetirable, retainUntil, validateCutover } from '../../../subgraphs/ai/keys/key-retention.logic.js';
import { percentile, shadowParity, validateLatencySamples, validateWindow } from '../../../subgraphs/ai/shadow/shadow.logic.js';
import { caught } from './catching.js';

const now = new Date('2026-11-21T12:00:00Z');
const DAY = 86_400_000;

describe('shadow parity', () => {
  it('computes nearest-rank percentiles', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect([percentile(values, 50), percentile(values, 95), percentile(values, 99), percentile(values, 100)]).toEqual([
      50, 95, 99, 100,
    ]);
    expect(percentile([7], 95)).toBe(7);
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(percentile([], 95)).toBeNull();
  });

  it('holds when the gateway P95 is within the ratio of the legacy P95', () => {
    const legacy = Array.from({ length: 40 }, (_, i) => 100 + i); // P95 = 137
    const gateway = Array.from({ length: 40 }, (_, i) => 110 + i).reverse(); // P95 = 147, unsorted on purpose
    const result = shadowParity({ gateway, legacy, maxRatio: 1.1, minSamples: 20 });
    expect(result).toEqual({
      gatewayP50: 129,
      gatewayP95: 147,
      gatewayP99: 149,
      legacyP95: 137,
      ratio: 1.073,
      parityHolds: true,
      sampleCounts: { gateway: 40, legacy: 40 },
      reason: null,
    });
    expect(shadowParity({ gateway, legacy, maxRatio: 1.05, minSamples: 20 })).toMatchObject({
      parityHolds: false,
      reason: 'ratio_exceeded',
    });
  });

  it('never holds on too few samples, however good the ratio', () => {
    expect(shadowParity({ gateway: [1, 2], legacy: [100, 200], maxRatio: 1.1, minSamples: 20 })).toMatchObject({
      parityHolds: false,
      reason: 'insufficient_samples',
      ratio: 0.01,
    });
    expect(shadowParity({ gateway: [], legacy: [], maxRatio: 1.1, minSamples: 0 })).toMatchObject({
      ratio: null,
      parityHolds: false,
    });
  });

  it('validates samples and windows', () => {
    expect(caught(AppError, () => validateLatencySamples('portal.triage', [])).details).toMatchObject({ argument: 'samples' });
    expect(caught(AppError, () => validateLatencySamples('portal.triage', [10, -1])).details).toMatchObject({
      argument: 'samples[1]',
    });
    expect(caught(AppError, () => validateLatencySamples('portal.triage', [1.5])).code).toBe('BAD_USER_INPUT');
    expect(caught(AppError, () => validateLatencySamples('Bad Key', [1])).details).toMatchObject({ argument: 'featureKey' });
    expect(validateLatencySamples('portal.triage', [0, 600_000]).samples).toEqual([0, 600_000]);
    expect(caught(AppError, () => validateWindow(now, now)).details).toMatchObject({ argument: 'from' });
    expect(caught(AppError, () => validateWindow(new Date(now.getTime() - 40 * DAY), now)).details).toMatchObject({
      argument: 'to',
    });
    expect(() => validateWindow(new Date(now.getTime() - 7 * DAY), now)).not.toThrow();
  });
});

describe('provider key retention', () => {
  const cutoverAt = new Date('2026-10-01T00:00:00Z');
  it('keeps a key 30 days after cutover, retirable only strictly after', () => {
    expect(retainUntil(cutoverAt, 30).toISOString()).toBe('2026-10-31T00:00:00.000Z');
    expect(mayRetire(cutoverAt, 30, new Date('2026-10-31T00:00:00Z'))).toBe(false);
    expect(mayRetire(cutoverAt, 30, new Date('2026-10-31T00:00:01Z'))).toBe(true);
  });

  it('refuses early or repeated retirement with stable codes', () => {
    const early = caught(AppError, () => requireRetirable({ cutoverAt, retiredAt: null }, 30, new Date('2026-10-20T00:00:00Z')));
    expect(early).toMatchObject({ code: 'keys.retention_window_open', status: 409 });
    expect(early.details).toMatchObject({ retainUntil: '2026-10-31T00:00:00.000Z', retentionDays: 30 });
    expect(caught(AppError, () => requireRetirable({ cutoverAt, retiredAt: now }, 30, now)).code).toBe('keys.already_retired');
    expect(() => requireRetirable({ cutoverAt, retiredAt: null }, 30, now)).not.toThrow();
  });

  it('validates cutover rows', () => {
    expect(
      caught(AppError, () => validateCutover({ serviceName: 'Chart Service', provider: 'openai', cutoverAt }, now)).details,
    ).toMatchObject({ argument: 'serviceName' });
    expect(
      caught(AppError, () =>
        validateCutover({ serviceName: 'chart', provider: 'openai', cutoverAt: new Date(now.getTime() + DAY) }, now),
      ).details,
    ).toMatchObject({
      argument: 'cutoverAt',
    });
  });
});

describe('feature flags', () => {
  const rows = [
    { featureKey: '*', flag: 'hitl.enabled', enabled: false },
    { featureKey: 'portal.triage', flag: 'hitl.enabled', enabled: true },
    { featureKey: '*', flag: 'quota.enabled', enabled: true },
  ];
  it('lets the feature row win over *, and defaults safety switches to on', () => {
    expect(resolveFlag(rows, 'portal.triage', 'hitl.enabled')).toBe(true);
    expect(resolveFlag(rows, 'patient_chart.note_summary', 'hitl.enabled')).toBe(false);
    expect(resolveFlag(rows, 'portal.triage', 'moderation.enabled')).toBe(true);
    expect(flagValue(rows, 'portal.triage', 'quota.enabled')).toBe(true);
    expect(flagValue([], 'portal.triage', 'quota.enabled')).toBeUndefined();
  });

  it('validates flag input', () => {
    expect(validateFlagInput({ featureKey: '*', flag: 'hitl.enabled', enabled: false, reason: ' incident 42 ' })).toEqual({
      featureKey: '*',
      flag: 'hitl.enabled',
      enabled: false,
      reason: 'incident 42',
    });
    expect(caught(AppError, () => validateFlagInput({ featureKey: '*', flag: 'hitl', enabled: false })).details).toMatchObject({
      argument: 'flag',
    });
    expect(
      caught(AppError, () => validateFlagInput({ featureKey: 'A B', flag: 'hitl.enabled', enabled: false })).details,
    ).toMatchObject({
      argument: 'featureKey',
    });
  });
});

describe('data-protection assessment', () => {
  const valid = {
    residency: 'AF',
    signedBy: 'usr_01JD0000000000000000000000',
    signedAt: new Date('2026-11-01T00:00:00Z'),
    documentHash: 'A'.repeat(64),
  };
  it('normalises the document hash', () => {
    expect(validateAssessment(valid, now).documentHash).toBe(`sha256:${'a'.repeat(64)}`);
  });
  it.each([
    ['residency', { residency: 'af' }],
    ['signedBy', { signedBy: ' ' }],
    ['signedAt', { signedAt: new Date(now.getTime() + DAY) }],
    ['documentHash', { documentHash: 'sha256:xyz' }],
  ])('refuses a bad %s', (argument, change) => {
    expect(caught(AppError, () => validateAssessment({ ...valid, ...change }, now)).details).toMatchObject({ argument });
  });
});

describe('legacy provenance backfill', () => {
  const row = (over: Partial<LegacyRowInput> = {}): LegacyRowInput => ({
    legacyId: 'legacy-1',
    featureKey: 'patient_chart.note_summary',
    createdAt: new Date('2025-06-01T00:00:00Z'),
    actorId: 'usr_01JD0000000000000000000000',
    ...over,
  });

  it('validates each row on its own and reports errors by index with codes', () => {
    const { valid, errors } = partitionBatch(
      [
        row(),
        row({ legacyId: 'legacy-2', outputHash: 'md5:abc' }),
        row({ legacyId: '' }),
        row({ legacyId: 'legacy-3', createdAt: new Date(now.getTime() + DAY) }),
        row({ legacyId: 'legacy-4', featureKey: 'Nope' }),
        row(),
        row({ legacyId: 'legacy-5', actorId: 'chart-service', outputHash: `sha256:${'0'.repeat(64)}` }),
      ],
      now,
    );
    expect(valid.map((v) => [v.index, v.record.legacyId, v.record.actorType])).toEqual([
      [0, 'legacy-1', 'user'],
      [6, 'legacy-5', 'service'],
    ]);
    expect(errors.map((e) => [e.index, e.legacyId, e.code])).toEqual([
      [1, 'legacy-2', 'backfill.invalid_output_hash'],
      [2, '', 'backfill.invalid_legacy_id'],
      [3, 'legacy-3', 'backfill.invalid_created_at'],
      [4, 'legacy-4', 'backfill.invalid_feature_key'],
      [5, 'legacy-1', 'backfill.duplicate_in_batch'],
    ]);
  });

  it(`refuses a batch of more than ${MAX_BACKFILL_ROWS} rows as a whole`, () => {
    const rows = Array.from({ length: MAX_BACKFILL_ROWS + 1 }, (_, i) => row({ legacyId: `l-${i}` }));
    expect(caught(AppError, () => partitionBatch(rows, now))).toMatchObject({
      code: 'BAD_USER_INPUT',
      details: { argument: 'rows' },
    });
    expect(partitionBatch(rows.slice(1), now).valid).toHaveLength(MAX_BACKFILL_ROWS);
  });
});
