import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors/errors.js';
import { quotaEtag, requireQuotaIfMatch, validateQuotaSettings } from '../../../subgraphs/ai/quota/quota-settings.logic.js';

const SETTINGS = { enabled: true, requestsPerMinute: 60, tokensPerDay: 10_000 };

function refusal(run: () => void): AppError {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('quota settings', () => {
  it('accepts 0 (no limit) up to the bounds, and refuses anything else naming the member', () => {
    expect(validateQuotaSettings({ enabled: false, requestsPerMinute: 0, tokensPerDay: 0 })).toEqual({
      enabled: false,
      requestsPerMinute: 0,
      tokensPerDay: 0,
    });
    expect(validateQuotaSettings({ enabled: true, requestsPerMinute: 1_000_000, tokensPerDay: 2_000_000_000 })).toMatchObject({
      requestsPerMinute: 1_000_000,
    });
    for (const [member, value] of [
      ['requestsPerMinute', -1],
      ['requestsPerMinute', 1_000_001],
      ['requestsPerMinute', 1.5],
      ['tokensPerDay', 2_000_000_001],
    ] as const) {
      const error = refusal(() => validateQuotaSettings({ ...SETTINGS, [member]: value }));
      expect(error).toMatchObject({ code: 'BAD_USER_INPUT', details: { argument: member } });
    }
  });

  it('tags the settings by content: equal settings, equal tags; any member changed, another tag', () => {
    expect(quotaEtag({ ...SETTINGS })).toBe(quotaEtag(SETTINGS));
    expect(quotaEtag(SETTINGS)).toMatch(/^"[0-9a-f]{32}"$/);
    expect(quotaEtag({ ...SETTINGS, enabled: false })).not.toBe(quotaEtag(SETTINGS));
    expect(quotaEtag({ ...SETTINGS, requestsPerMinute: 61 })).not.toBe(quotaEtag(SETTINGS));
    expect(quotaEtag({ ...SETTINGS, tokensPerDay: 1 })).not.toBe(quotaEtag(SETTINGS));
  });

  it('needs If-Match (428), takes *, the tag, the bare tag or a list holding it, and refuses any other (412)', () => {
    const etag = quotaEtag(SETTINGS);
    expect(refusal(() => requireQuotaIfMatch(undefined, etag))).toMatchObject({
      code: 'request.precondition_required',
      status: 428,
    });
    expect(refusal(() => requireQuotaIfMatch('  ', etag)).status).toBe(428);
    for (const ok of ['*', etag, etag.slice(1, -1), `"other", ${etag}`])
      expect(() => requireQuotaIfMatch(ok, etag)).not.toThrow();
    for (const stale of ['"other"', `W/${etag}`]) {
      expect(refusal(() => requireQuotaIfMatch(stale, etag))).toMatchObject({
        code: 'request.precondition_failed',
        status: 412,
        details: { etag },
      });
    }
  });
});
