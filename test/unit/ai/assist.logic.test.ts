import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors.js';
import { actorOf, decideRelease, parseAssistInput } from '../../../subgraphs/ai/assist/assist.logic.js';

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
