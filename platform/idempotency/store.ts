import type { Clock } from '../clock.js';
import type { StoredResponse } from './idempotency.logic.js';

/** Proof of holding a key: completing or releasing needs it, so a request whose lease expired and
 * was taken over can never overwrite the new holder's record. */
export interface Lease {
  key: string;
  token: string;
  fingerprint: string;
}

export type BeginOutcome =
  | { kind: 'started'; lease: Lease }
  | { kind: 'replay'; response: StoredResponse }
  /** `retryAfterMs`: what is left of the holder's lease, the longest a retry can have to wait. */
  | { kind: 'in_flight'; retryAfterMs: number }
  | { kind: 'mismatch' };

/**
 * The idempotency store port. `begin` is one atomic step: it either takes the key (absent, or its
 * record expired) as an in-flight lease, or reports what holds it. Implementations: Redis (TTL)
 * and the database table (embedded mode, survives restarts).
 */
export interface IdempotencyStore {
  readonly kind: 'redis' | 'database';
  /** How long a lease lives without renewal. */
  readonly leaseMs: number;
  begin(key: string, fingerprint: string): Promise<BeginOutcome>;
  /** Stores the response for the retention period; false when the lease was lost meanwhile. */
  complete(lease: Lease, response: StoredResponse): Promise<boolean>;
  /** Frees the key so the same request may run again; false when the lease was lost meanwhile. */
  release(lease: Lease): Promise<boolean>;
  /**
   * Extends a live lease by `leaseSeconds` from now; false when it was lost (expired and taken
   * over, or settled). The holder renews while it works, so the lease can be short: a holder that
   * dies stops renewing and its key is free within one lease.
   */
  renew(lease: Lease): Promise<boolean>;
}

export interface StoreTiming {
  /** Retention of a completed record (spec: 24 hours). */
  ttlSeconds: number;
  /** Lifetime of an in-flight record without renewal: how long a crashed holder blocks its key. */
  leaseSeconds: number;
  clock?: Clock;
}
