import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors/errors.js';
import {
  actorOf,
  assistOutput,
  closeRecord,
  decideRelease,
  endState,
  openRecord,
  parseAssistInput,
  passedOverAttempts,
  withProvenance,
  type AssistEnd,
} from '../../../subgraphs/ai/assist/assist.logic.js';

const valid = {
  featureKey: 'patient_chart.note_summary',
  variables: { note: 'BP 120/80', __mock: { status: 500 } },
  context: { facilityId: 'fac-1', specialty: 'cardiology' },
};

function code(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return error instanceof AppError
      ? `${error.code}:${String(error.details?.argument ?? error.details?.variable ?? '')}`
      : 'other';
  }
  return undefined;
}

describe('assist input', () => {
  it('separates gateway directives from template variables and fills the locale', () => {
    const parsed = parseAssistInput(valid, ['de-CH']);
    expect(parsed.variables).toEqual({ note: 'BP 120/80', locale: 'de-CH' });
    expect(parsed.mock).toEqual(expect.objectContaining({ status: 500 }));
    expect(parsed.mode).toBe('live');
    expect(parsed.residency).toBeNull();
    expect(parseAssistInput({ ...valid, locale: 'fr' }, ['de']).variables.locale).toBe('fr');
    expect(parseAssistInput({ ...valid, variables: { locale: 'es' } }, ['de']).variables.locale).toBe('es');
    expect(parseAssistInput({ ...valid, variables: {} }, []).variables.locale).toBe('en');
  });

  it('names the field of every bad input', () => {
    expect(code(() => parseAssistInput({ ...valid, featureKey: 'Not A Key' }, []))).toBe('BAD_USER_INPUT:featureKey');
    expect(code(() => parseAssistInput({ ...valid, residency: 'af' }, []))).toBe('BAD_USER_INPUT:residency');
    expect(code(() => parseAssistInput({ ...valid, mode: 'dry' }, []))).toBe('BAD_USER_INPUT:mode');
    expect(code(() => parseAssistInput({ ...valid, locale: 'not a tag!' }, []))).toBe('BAD_USER_INPUT:locale');
    expect(code(() => parseAssistInput({ ...valid, context: { facilityId: '', specialty: 'x' } }, []))).toBe(
      'BAD_USER_INPUT:context.facilityId',
    );
    expect(
      code(() => parseAssistInput({ ...valid, context: { facilityId: 'f', specialty: 'x', subjectRef: 'x'.repeat(300) } }, [])),
    ).toBe('BAD_USER_INPUT:context.subjectRef');
    expect(code(() => parseAssistInput({ ...valid, variables: { __mock: { status: 418 } } }, []))).toBe('BAD_USER_INPUT:__mock');
  });
});

describe('release decision', () => {
  const base = {
    mode: 'live' as const,
    hitlMode: null,
    hitlEnabled: true,
    moderation: null,
    moderationRequired: false,
    moderationEnabled: true,
  };

  it('releases when no control applies', () => {
    expect(decideRelease(base)).toMatchObject({
      status: 'completed',
      returnText: true,
      holdText: false,
      bypassed: false,
      bypassedControls: [],
    });
  });

  it('holds for review when the policy requires it', () => {
    expect(decideRelease({ ...base, hitlMode: 'required' })).toMatchObject({
      status: 'pending_review',
      returnText: false,
      holdText: true,
      reviewState: 'pending',
      bypassed: false,
    });
  });

  it('releases unreviewed, flagged as a bypass, when review is switched off by flag', () => {
    expect(decideRelease({ ...base, hitlMode: 'required', hitlEnabled: false })).toMatchObject({
      status: 'completed',
      returnText: true,
      reviewState: 'bypassed_by_flag',
      bypassed: true,
      bypassedControls: ['review'],
    });
  });

  it('blocks flagged output', () => {
    expect(
      decideRelease({ ...base, moderationRequired: true, moderation: { flagged: true }, hitlMode: 'required' }),
    ).toMatchObject({
      status: 'blocked',
      returnText: false,
      holdText: false,
      reviewState: null,
    });
  });

  it('names a required moderation switched off by flag as a bypass, with or without review', () => {
    expect(decideRelease({ ...base, moderationRequired: true, moderationEnabled: false })).toMatchObject({
      status: 'completed',
      returnText: true,
      bypassedControls: ['moderation'],
    });
    expect(decideRelease({ ...base, moderationRequired: true, moderationEnabled: false, hitlMode: 'required' })).toMatchObject({
      status: 'pending_review',
      bypassedControls: ['moderation'],
    });
    expect(
      decideRelease({ ...base, moderationRequired: true, moderationEnabled: false, hitlMode: 'required', hitlEnabled: false }),
    ).toMatchObject({
      status: 'completed',
      bypassedControls: ['moderation', 'review'],
    });
    // Not required: switching it off bypasses nothing.
    expect(decideRelease({ ...base, moderationEnabled: false }).bypassed).toBe(false);
  });

  it('never returns or holds shadow output, and a shadow call bypasses nothing', () => {
    expect(
      decideRelease({
        ...base,
        mode: 'shadow',
        hitlMode: 'required',
        hitlEnabled: false,
        moderationRequired: true,
        moderationEnabled: false,
      }),
    ).toMatchObject({
      status: 'completed',
      returnText: false,
      holdText: false,
      bypassed: false,
    });
  });
});

describe('actor', () => {
  it('tells people from service accounts', () => {
    expect(actorOf('usr_01JD0000000000000000000000').type).toBe('user');
    expect(actorOf('svc-portal').type).toBe('service');
  });
});

describe('the outcome of an admitted request', () => {
  const createdAt = new Date('2026-11-21T10:00:00Z');
  const record = {
    ...openRecord({
      provenanceId: 'prv_1',
      tenantId: 'ten_1',
      subject: 'svc-portal',
      input: parseAssistInput(valid, []),
      createdAt,
    }),
    templateId: 'tpl_1',
    templateVersion: 2,
    templateHash: 'sha256:t',
    provider: 'mock',
    model: 'mock-1',
    outputHash: 'sha256:o',
    reviewState: 'pending',
  };
  const release = decideRelease({
    mode: 'live',
    hitlMode: 'required',
    hitlEnabled: true,
    moderation: null,
    moderationRequired: false,
    moderationEnabled: true,
  });
  const held: AssistEnd = { kind: 'released', release: { ...release, status: 'pending_review' }, text: 'the answer' };
  const timings = { totalMs: 12, providerMs: 5, queueMs: 3 };

  it('opens as failed with nothing decided, from the admitted input', () => {
    const opened = openRecord({
      provenanceId: 'prv_1',
      tenantId: 'ten_1',
      subject: 'usr_01JD0000000000000000000000',
      input: parseAssistInput(valid, []),
      createdAt,
    });
    expect(opened).toMatchObject({
      status: 'failed',
      actorType: 'user',
      facilityId: 'fac-1',
      attempts: [],
      completedAt: createdAt,
    });
    expect(opened.templateId).toBeNull();
  });

  it('ends rejected for a refusal (4xx), failed for an outage (5xx) or a bug, and says why', () => {
    expect(endState({ kind: 'failed', error: new AppError('routing.no_rule', 'x') })).toEqual({
      status: 'rejected',
      errorCode: 'routing.no_rule',
    });
    expect(endState({ kind: 'failed', error: new AppError('provider.unavailable', 'x') })).toEqual({
      status: 'failed',
      errorCode: 'provider.unavailable',
    });
    expect(endState({ kind: 'failed', error: new TypeError('bug') })).toEqual({
      status: 'failed',
      errorCode: 'INTERNAL_SERVER_ERROR',
    });
    expect(endState({ kind: 'blocked', code: 'provider.content_filter', categories: null })).toEqual({
      status: 'blocked',
      errorCode: 'provider.content_filter',
    });
    expect(endState(held)).toEqual({ status: 'pending_review', errorCode: null });
    const completedAt = new Date('2026-11-21T10:00:01Z');
    expect(closeRecord(record, held, completedAt, 1000)).toMatchObject({
      status: 'pending_review',
      completedAt,
      latencyMs: 1000,
    });
  });

  it('answers a held output with its review task and no text, and a blocked one with its code and categories', () => {
    expect(assistOutput(record, held, timings, 'rvt_1')).toEqual({
      provenanceId: 'prv_1',
      status: 'pending_review',
      text: null,
      provider: 'mock',
      model: 'mock-1',
      template: { templateId: 'tpl_1', version: 2, hash: 'sha256:t' },
      timings,
      reviewState: 'pending',
      mode: 'live',
      outputHash: 'sha256:o',
      code: null,
      moderationCategories: null,
      reviewTaskId: 'rvt_1',
    });
    expect(
      assistOutput(record, { kind: 'blocked', code: 'moderation.blocked', categories: ['violence'] }, timings, null),
    ).toMatchObject({
      status: 'blocked',
      text: null,
      reviewState: null,
      code: 'moderation.blocked',
      moderationCategories: ['violence'],
    });
  });

  it('adds the provenance id to an error, keeping its code, status and headers', () => {
    const error = withProvenance(
      new AppError('moderation.unavailable', 'x', { status: 503, details: { stage: 'input' }, headers: { 'retry-after': '5' } }),
      'prv_1',
    );
    expect(error).toMatchObject({ code: 'moderation.unavailable', status: 503, headers: { 'retry-after': '5' } });
    expect(error.details).toEqual({ stage: 'input', provenanceId: 'prv_1' });
  });

  it('records the targets routing passed over as attempts of their own', () => {
    expect(
      passedOverAttempts([
        { provider: 'openai-compatible', model: 'gpt', reason: 'residency' },
        { provider: 'bedrock', model: 'claude', reason: 'not_configured' },
      ]).map((a) => [a.provider, a.outcome, a.errorCode]),
    ).toEqual([
      ['openai-compatible', 'skipped_residency', 'residency'],
      ['bedrock', 'not_configured', 'not_configured'],
    ]);
  });
});
