import { describe, expect, it } from 'vitest';
import {
  admit,
  degradedPolicy,
  fallbackReplicas,
  estimateTokens,
  tokenCorrection,
  windowKeys,
} from '../../../subgraphs/ai/quota/quota.logic.js';

const T = 'ten_01JD0000000000000000000000';

describe('quota windows', () => {
  it('hash-tags both keys on the tenant so they share a Redis Cluster slot', () => {
    const keys = windowKeys(T, Date.parse('2026-11-21T10:15:30.250Z'));
    expect(keys.rpmKey).toBe(`quota:{${T}}:rpm:${Math.floor(Date.parse('2026-11-21T10:15:00Z') / 60_000)}`);
    expect(keys.tpdKey).toBe(`quota:{${T}}:tpd:20261121`);
    expect(keys.rpmResetSeconds).toBe(30);
    expect(keys.tpdResetSeconds).toBe(13 * 3600 + 44 * 60 + 30);
  });

  it('never gives a Retry-After below one second', () => {
    expect(windowKeys(T, Date.parse('2026-11-21T10:15:59.999Z')).rpmResetSeconds).toBe(1);
  });
});

describe('admission rule', () => {
  const limits = { requestsPerMinute: 2, tokensPerDay: 100 };
  it('admits up to the limits and names the one that is hit', () => {
    expect(admit({ requests: 1, tokens: 0 }, limits, 10)).toEqual({ admitted: true });
    expect(admit({ requests: 2, tokens: 0 }, limits, 10)).toEqual({ admitted: false, limit: 'requests_per_minute' });
    expect(admit({ requests: 0, tokens: 90 }, limits, 10)).toEqual({ admitted: true });
    expect(admit({ requests: 0, tokens: 91 }, limits, 10)).toEqual({ admitted: false, limit: 'tokens_per_day' });
  });

  it('treats 0 as no limit', () => {
    expect(admit({ requests: 1e6, tokens: 1e9 }, { requestsPerMinute: 0, tokensPerDay: 0 }, 1e6)).toEqual({ admitted: true });
  });
});

describe('degraded policy (shared store down)', () => {
  it('fails closed when a token budget applies', () => {
    expect(degradedPolicy({ requestsPerMinute: 600, tokensPerDay: 1000 }, 25, 1)).toEqual({
      mode: 'fail_closed',
      reason: 'token_budget',
    });
  });
  it('caps the request rate locally at the share of the limit divided by the replicas', () => {
    expect(degradedPolicy({ requestsPerMinute: 600, tokensPerDay: 0 }, 25, 1)).toEqual({ mode: 'local_cap', cap: 150 });
    expect(degradedPolicy({ requestsPerMinute: 600, tokensPerDay: 0 }, 25, 3)).toEqual({ mode: 'local_cap', cap: 50 });
    // 600 × 25 % / 7 = 21.4…: rounded down, so 7 replicas admit 147 ≤ 150.
    expect(degradedPolicy({ requestsPerMinute: 600, tokensPerDay: 0 }, 25, 7)).toEqual({ mode: 'local_cap', cap: 21 });
  });
  it('never lets the replicas together pass the share, for any limit, share and replica count', () => {
    for (const rpm of [1, 2, 7, 10, 99, 600, 100_000]) {
      for (const percent of [0, 1, 25, 50, 100]) {
        for (const replicas of [1, 2, 3, 5, 16]) {
          const decision = degradedPolicy({ requestsPerMinute: rpm, tokensPerDay: 0 }, percent, replicas);
          const total = decision.mode === 'local_cap' ? decision.cap * replicas : 0;
          expect(total * 100).toBeLessThanOrEqual(rpm * percent);
        }
      }
    }
  });
  it('refuses (quota.unavailable) when the share is below one request per replica, instead of rounding up', () => {
    expect(degradedPolicy({ requestsPerMinute: 2, tokensPerDay: 0 }, 25, 1)).toEqual({
      mode: 'fail_closed',
      reason: 'share_below_one',
    });
    expect(degradedPolicy({ requestsPerMinute: 600, tokensPerDay: 0 }, 0, 1)).toMatchObject({ mode: 'fail_closed' });
  });
  it('leaves a tenant without a rate limit unlimited', () => {
    expect(degradedPolicy({ requestsPerMinute: 0, tokensPerDay: 0 }, 25, 4)).toEqual({
      mode: 'local_cap',
      cap: Number.POSITIVE_INFINITY,
    });
  });
  it('divides by the larger of the configured and the discovered replica count', () => {
    expect(fallbackReplicas(1, undefined)).toBe(1);
    expect(fallbackReplicas(1, 3)).toBe(3);
    expect(fallbackReplicas(4, 2)).toBe(4);
  });
});

describe('token accounting', () => {
  it('reserves input/4 plus the output ceiling and corrects to the reported usage', () => {
    expect(estimateTokens(400, 1024)).toBe(1124);
    expect(tokenCorrection(1124, 300)).toBe(-824);
    expect(tokenCorrection(1124, undefined)).toBe(0);
  });
});
