import { describe, expect, it } from 'vitest';
import {
  decodeEffectValue,
  effectCallerPrefix,
  effectClaim,
  effectTenantPrefix,
  encodeEffectValue,
  type EffectRequest,
} from '../../../platform/idempotency/effect.logic.js';

const request: EffectRequest = {
  tenantId: 'ten_01JD0000000000000000000A00',
  subject: 'svc:consumer',
  field: 'createRoutingRule',
  alias: 'createRoutingRule',
  args: { input: { featureKey: 'portal.triage', fallbacks: [] } },
  idempotencyKey: '01JD00000000000000000000K1',
};

describe('effect values', () => {
  it('round-trips dates, big integers and bytes, nested in objects and arrays', () => {
    const value = {
      rule: { id: 'rul_1', createdAt: new Date('2026-11-21T08:00:00.123Z'), versions: [{ at: new Date(0), n: 1n }] },
      bytes: new Uint8Array([0, 1, 254, 255]),
      text: 'plain',
      empty: null,
      list: [1, 'two', { three: 3 }],
    };
    const decoded = decodeEffectValue<typeof value>(encodeEffectValue(value));
    expect(decoded).toEqual(value);
    expect(decoded.rule.createdAt).toBeInstanceOf(Date);
    expect(decoded.rule.versions[0].n).toBe(1n);
    expect(decoded.bytes).toBeInstanceOf(Uint8Array);
  });

  it('keeps an invalid Date invalid and undefined fields absent', () => {
    const decoded = decodeEffectValue<{ at: Date; gone?: string }>(
      encodeEffectValue({ at: new Date(Number.NaN), gone: undefined }),
    );
    expect(Number.isNaN(decoded.at.getTime())).toBe(true);
    expect('gone' in decoded).toBe(false);
  });

  it('encodes a top-level undefined as null', () => {
    expect(decodeEffectValue(encodeEffectValue(undefined))).toBeNull();
  });
});

describe('effect claims', () => {
  it('scope the key by tenant, caller, field, alias and Idempotency-Key', () => {
    const base = effectClaim(request, 60).key;
    for (const change of [
      { tenantId: 'ten_01JD0000000000000000000B00' },
      { subject: 'svc:other' },
      { field: 'updateRoutingRule' },
      { alias: 'second' },
      { idempotencyKey: '01JD00000000000000000000K2' },
    ]) {
      expect(effectClaim({ ...request, ...change }, 60).key).not.toBe(base);
    }
    // A separator inside a part cannot make two scopes collide.
    expect(effectClaim({ ...request, subject: 'a|b', field: 'c' }, 60).key).not.toBe(
      effectClaim({ ...request, subject: 'a', field: 'b|c' }, 60).key,
    );
  });

  it("start with their tenant's and caller's prefix, matching no other caller (a GDPR erasure deletes by it)", () => {
    const key = effectClaim({ ...request, subject: 'usr_a|b' }, 60).key;
    expect(key.startsWith(effectCallerPrefix(request.tenantId, 'usr_a|b'))).toBe(true);
    expect(key.startsWith(effectTenantPrefix(request.tenantId))).toBe(true);
    expect(key.startsWith(effectCallerPrefix(request.tenantId, 'usr_a'))).toBe(false);
    expect(effectClaim({ ...request, subject: 'usr_ab' }, 60).key.startsWith(effectCallerPrefix(request.tenantId, 'usr_a'))).toBe(
      false,
    );
  });

  it('fingerprint the field and its arguments, whatever their key order', () => {
    const claim = effectClaim(request, 60);
    expect(effectClaim({ ...request, args: { input: { fallbacks: [], featureKey: 'portal.triage' } } }, 60).fingerprint).toBe(
      claim.fingerprint,
    );
    expect(effectClaim({ ...request, args: { input: { featureKey: 'other', fallbacks: [] } } }, 60).fingerprint).not.toBe(
      claim.fingerprint,
    );
    expect(effectClaim({ ...request, field: 'updateRoutingRule', alias: 'createRoutingRule' }, 60).fingerprint).not.toBe(
      claim.fingerprint,
    );
  });

  it('tell two Date arguments apart (custom scalars arrive as Date objects)', () => {
    const at = (iso: string) => effectClaim({ ...request, args: { from: new Date(iso) } }, 60).fingerprint;
    expect(at('2026-01-01T00:00:00Z')).not.toBe(at('2026-01-02T00:00:00Z'));
  });

  it('start unconsumed, with the TTL they were given', () => {
    expect(effectClaim(request, 90)).toMatchObject({ consumed: false, ttlSeconds: 90 });
  });
});
