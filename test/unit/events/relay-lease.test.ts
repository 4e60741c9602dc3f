import { describe, expect, it } from 'vitest';
import {
  heartbeatIntervalMs,
  heldLease,
  leaseMarginMs,
  leaseValid,
  progressStalled,
  renewalDue,
} from '../../../events/publish/relay-lease.logic.js';

describe('relay lease, as this process counts on it', () => {
  const ttl = 10_000;

  it('lasts from the moment the statement that took it was SENT, less a margin, so it ends before the database says', () => {
    const lease = heldLease(7n, 1_000, ttl);
    expect(leaseMarginMs(ttl)).toBe(500);
    expect(lease).toEqual({ token: 7n, validUntil: 1_000 + ttl - 500 });
    expect(leaseValid(lease, 1_000 + ttl - 501)).toBe(true);
    expect(leaseValid(lease, 1_000 + ttl - 500)).toBe(false);
    expect(leaseValid(undefined, 0)).toBe(false);
  });

  it('is lapsed for a process that was paused past it, however briefly it thinks it ran', () => {
    const lease = heldLease(1n, 0, ttl);
    // A SIGSTOP of 45 s: the monotonic clock moved on meanwhile.
    expect(leaseValid(lease, 45_000)).toBe(false);
  });

  it('is renewed once a third of it has passed: two heartbeats may fail before it lapses', () => {
    const lease = heldLease(1n, 0, ttl);
    expect(renewalDue(lease, 3_000, ttl)).toBe(false);
    expect(renewalDue(lease, 3_400, ttl)).toBe(true);
    expect(heartbeatIntervalMs(ttl)).toBe(3_333);
    expect(3 * heartbeatIntervalMs(ttl)).toBeLessThan(ttl);
  });

  it('keeps a margin of a twentieth, at most a second', () => {
    expect(leaseMarginMs(2_000)).toBe(100);
    expect(leaseMarginMs(600_000)).toBe(1_000);
  });

  it('is stalled once the window has passed without publishing progress, not before', () => {
    expect(progressStalled(1_000, 1_000 + ttl, ttl)).toBe(false);
    expect(progressStalled(1_000, 1_001 + ttl, ttl)).toBe(true);
  });
});
