/**
 * Per-tenant quota rules as plain data: fixed windows (one per UTC minute for requests, one per
 * UTC day for tokens), keys hash-tagged on the tenant so both counters of a tenant live in one
 * Redis Cluster slot and one Lua script can check and bump them atomically.
 */

export interface QuotaLimits {
  /** 0 = no request-rate limit. */
  requestsPerMinute: number;
  /** 0 = no daily token budget. */
  tokensPerDay: number;
}

export type QuotaLimitName = 'requests_per_minute' | 'tokens_per_day';

export interface QuotaWindowKeys {
  rpmKey: string;
  tpdKey: string;
  /** Seconds until each window ends: Retry-After and the key's expiry. */
  rpmResetSeconds: number;
  tpdResetSeconds: number;
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

export function windowKeys(tenantId: string, nowMs: number): QuotaWindowKeys {
  const minute = Math.floor(nowMs / MINUTE_MS);
  const day = new Date(nowMs).toISOString().slice(0, 10).replaceAll('-', '');
  return {
    rpmKey: `quota:{${tenantId}}:rpm:${minute}`,
    tpdKey: `quota:{${tenantId}}:tpd:${day}`,
    rpmResetSeconds: Math.max(1, Math.ceil(((minute + 1) * MINUTE_MS - nowMs) / 1000)),
    tpdResetSeconds: Math.max(1, Math.ceil((Math.floor(nowMs / DAY_MS + 1) * DAY_MS - nowMs) / 1000)),
  };
}

export interface CounterState {
  requests: number;
  tokens: number;
}

export type AdmitDecision = { admitted: true } | { admitted: false; limit: QuotaLimitName };

/** The rule the Lua script and the in-memory store both implement; kept here so it is tested once. */
export function admit(current: CounterState, limits: QuotaLimits, tokens: number): AdmitDecision {
  if (limits.requestsPerMinute > 0 && current.requests + 1 > limits.requestsPerMinute) {
    return { admitted: false, limit: 'requests_per_minute' };
  }
  if (limits.tokensPerDay > 0 && current.tokens + tokens > limits.tokensPerDay) {
    return { admitted: false, limit: 'tokens_per_day' };
  }
  return { admitted: true };
}

/**
 * The token reservation made before the prompt is rendered: the input's size (about four
 * characters a token, the usual rule of thumb for English with BPE tokenizers) plus the most the
 * model may answer. The reservation is corrected to the provider's reported usage afterwards.
 */
export function estimateTokens(inputChars: number, maxOutputTokens: number): number {
  return Math.ceil(inputChars / 4) + maxOutputTokens;
}

/** While the shared store is down: only the request rate may degrade to a local cap. */
export type DegradedDecision =
  { mode: 'local_cap'; cap: number } | { mode: 'fail_closed'; reason: 'token_budget' | 'share_below_one' };

/**
 * The local cap of one replica while the shared store is down: the deployment as a whole may admit
 * `fallbackPercent` of the tenant's requests per minute, shared evenly by `replicas`, so N replicas
 * together stay within the documented share instead of admitting N times it. A share that rounds
 * to less than one request per replica (a small limit, many replicas, or 0 %) refuses instead:
 * rounding it up to one would let the replicas together pass the share.
 */
export function degradedPolicy(limits: QuotaLimits, fallbackPercent: number, replicas: number): DegradedDecision {
  // A token budget is a money limit: without the shared counter no replica can know what was spent.
  if (limits.tokensPerDay > 0) return { mode: 'fail_closed', reason: 'token_budget' };
  if (limits.requestsPerMinute <= 0) return { mode: 'local_cap', cap: Number.POSITIVE_INFINITY };
  // Integer arithmetic: the cap must never round above the share.
  const cap = Math.floor((limits.requestsPerMinute * fallbackPercent) / (100 * Math.max(1, replicas)));
  return cap >= 1 ? { mode: 'local_cap', cap } : { mode: 'fail_closed', reason: 'share_below_one' };
}

/**
 * How many replicas share the fallback: the configured count (QUOTA_FALLBACK_REPLICAS, the most
 * that can run at once) or the count last seen in the shared store, whichever is larger. Counting
 * too many only lowers each cap; counting too few is what lets the replicas pass the share.
 */
export function fallbackReplicas(configured: number, discovered: number | undefined): number {
  return Math.max(1, configured, discovered ?? 0);
}

/** The token correction after the call; never negative overall (the store clamps at zero). */
export function tokenCorrection(reserved: number, actual: number | undefined): number {
  return (actual ?? reserved) - reserved;
}
