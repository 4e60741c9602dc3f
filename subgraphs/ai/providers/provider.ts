/**
 * Every model provider sits behind this one interface; the call engine (caller.ts) adds timeouts,
 * retries, the circuit breaker and fallbacks around it, so adapters stay thin protocol mappings.
 */
export interface ProviderRequest {
  model: string;
  prompt: string;
  maxOutputTokens: number;
  /** 1 for the first attempt at this provider, 2 for the first retry, ... */
  attempt: number;
  signal: AbortSignal;
  /**
   * Fault-injection directive from the request (`__mock` variable). The engine hands it only to
   * the mock provider, so no request can steer a real provider with it.
   */
  mock?: MockDirective;
}

export interface ProviderResponse {
  text: string;
  /** The model the provider says answered (may differ from the requested alias). */
  model: string;
  usage?: { inputTokens: number; outputTokens: number };
}

export interface MockDirective {
  latencyMs?: number;
  status?: 400 | 401 | 403 | 429 | 500 | 502 | 503;
  retryAfterSeconds?: number;
  timeout?: boolean;
  malformed?: boolean;
  contentFilter?: boolean;
  connectError?: boolean;
  /** Apply the fault only to the first N attempts, then answer normally (drives retry paths). */
  failAttempts?: number;
}

export interface ModelProvider {
  readonly name: string;
  /** Residency codes it may serve ('*' = any). */
  readonly residencies: readonly string[];
  /** Per-attempt timeout. */
  readonly timeoutMs: number;
  complete(request: ProviderRequest): Promise<ProviderResponse>;
}

export type ProviderErrorKind =
  | 'rate_limited'
  | 'server_error'
  | 'timeout'
  | 'connect_error'
  | 'malformed_response'
  | 'bad_request'
  | 'auth_error'
  | 'content_filter'
  | 'not_configured';

/**
 * A provider failure, classified. Its message is built by our adapters from status codes only,
 * never from a provider body or a request header, so it can carry no key or prompt text.
 */
export class ProviderError extends Error {
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
    readonly options: { status?: number; retryAfterMs?: number } = {},
  ) {
    super(message);
    this.name = 'ProviderError';
  }
  get status(): number | undefined {
    return this.options.status;
  }
  get retryAfterMs(): number | undefined {
    return this.options.retryAfterMs;
  }
}

/** HTTP status to failure kind, shared by every HTTP adapter. */
export function kindForStatus(status: number): ProviderErrorKind {
  if (status === 429) return 'rate_limited';
  if (status === 401 || status === 403) return 'auth_error';
  if (status === 408) return 'timeout';
  if (status >= 500) return 'server_error';
  return 'bad_request';
}

/** Retry-After as seconds or an HTTP date (RFC 9110 §10.2.3), plus OpenAI's retry-after-ms. */
export function parseRetryAfter(
  retryAfter: string | null | undefined,
  retryAfterMs: string | null | undefined,
  nowMs: number,
): number | undefined {
  if (retryAfterMs && /^\d+(\.\d+)?$/.test(retryAfterMs.trim())) return Math.ceil(Number(retryAfterMs));
  if (!retryAfter) return undefined;
  const value = retryAfter.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}
