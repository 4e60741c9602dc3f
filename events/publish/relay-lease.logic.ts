/**
 * The relay lease's local view, on this process's monotonic clock (performance.now(), which keeps
 * counting while the process is paused, as a SIGSTOP or a long GC pause does): the database decides
 * who holds the lease, and the holder trusts it only until `ttlMs` after it SENT the statement that
 * took or renewed it. The database set the expiry at or after that moment, so the holder's own
 * deadline always falls first: a holder paused past it finds its lease lapsed when it resumes and
 * publishes nothing until it takes the lease again (with a new token).
 */
export interface HeldLease {
  token: bigint;
  /** Monotonic ms after which this process no longer counts on the lease. */
  validUntil: number;
}

/** What the clocks of two hosts may drift apart in one lease period: kept in hand. */
export function leaseMarginMs(ttlMs: number): number {
  return Math.min(1_000, Math.ceil(ttlMs / 20));
}

export function heldLease(token: bigint, sentAt: number, ttlMs: number): HeldLease {
  return { token, validUntil: sentAt + ttlMs - leaseMarginMs(ttlMs) };
}

export function leaseValid(lease: HeldLease | undefined, now: number): lease is HeldLease {
  return lease !== undefined && now < lease.validUntil;
}

/** The heartbeat renews once a third of the period has passed, so two renewals may fail before it lapses. */
export function renewalDue(lease: HeldLease, now: number, ttlMs: number): boolean {
  return lease.validUntil - now < ttlMs - leaseMarginMs(ttlMs) - ttlMs / 3;
}

export function heartbeatIntervalMs(ttlMs: number): number {
  return Math.max(100, Math.floor(ttlMs / 3));
}

/**
 * The holder has made no publishing progress for longer than the window: its database link
 * renews the lease, but it cannot do what the lease is for.
 */
export function progressStalled(lastProgress: number, now: number, windowMs: number): boolean {
  return now - lastProgress > windowMs;
}
