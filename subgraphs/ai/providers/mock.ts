import { sha256Hex } from '../../../platform/text/canonical-json.js';
import { badInput } from '../../../platform/errors/errors.js';
import { ProviderError, type MockDirective, type ModelProvider, type ProviderRequest } from './provider.js';

/**
 * The built-in provider: deterministic output from the input (same prompt and model = same text),
 * and, when fault injection is on, faults driven by the request's `__mock` directive:
 *   { latencyMs, status: 400|401|403|429|500|502|503, retryAfterSeconds, timeout: true,
 *     malformed: true, contentFilter: true, connectError: true, failAttempts: n }
 * `failAttempts` limits the fault to the first n attempts, then the mock answers normally.
 */
export function createMockProvider(options: {
  residencies: readonly string[];
  timeoutMs: number;
  faultInjection: boolean;
}): ModelProvider {
  return {
    name: 'mock',
    residencies: options.residencies,
    timeoutMs: options.timeoutMs,
    async complete(request) {
      const directive = options.faultInjection ? request.mock : undefined;
      const faulty =
        directive !== undefined && (directive.failAttempts === undefined || request.attempt <= directive.failAttempts);
      if (directive?.latencyMs) await delay(Math.min(directive.latencyMs, 600_000), request.signal);
      if (faulty) await injectFault(directive, request);
      return answer(request);
    },
  };
}

function answer(request: ProviderRequest) {
  const digest = sha256Hex(`${request.model}\u0000${request.prompt}`).slice(0, 16);
  const words = request.prompt.split(/\s+/).filter(Boolean);
  const text = `[mock:${request.model}:${digest}] ${words.slice(0, 24).join(' ')}`.slice(0, request.maxOutputTokens * 4);
  return {
    text,
    model: request.model,
    usage: { inputTokens: Math.ceil(request.prompt.length / 4), outputTokens: Math.ceil(text.length / 4) },
  };
}

async function injectFault(directive: MockDirective, request: ProviderRequest): Promise<void> {
  if (directive.timeout) {
    // Never answers: the engine's per-attempt timeout aborts it.
    await delay(Number.MAX_SAFE_INTEGER, request.signal);
  }
  if (directive.connectError) throw new ProviderError('connect_error', 'mock: connection refused');
  if (directive.malformed) throw new ProviderError('malformed_response', 'mock: malformed response body');
  if (directive.contentFilter) throw new ProviderError('content_filter', 'mock: content filtered', { status: 400 });
  if (directive.status) {
    const kind =
      directive.status === 429
        ? 'rate_limited'
        : directive.status >= 500
          ? 'server_error'
          : directive.status === 400
            ? 'bad_request'
            : 'auth_error';
    throw new ProviderError(kind, `mock: HTTP ${directive.status}`, {
      status: directive.status,
      retryAfterMs: directive.retryAfterSeconds !== undefined ? directive.retryAfterSeconds * 1000 : undefined,
    });
  }
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, Math.min(ms, 2 ** 31 - 1));
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

const badMock = (message: string) => badInput(message, { variable: '__mock' });

/** Validates the `__mock` variable; anything else in it is a client mistake, not a silent no-op. */
export function parseMockDirective(value: unknown): MockDirective | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw badMock('__mock must be an object');
  const input = value as Record<string, unknown>;
  const allowed = new Set([
    'latencyMs',
    'status',
    'retryAfterSeconds',
    'timeout',
    'malformed',
    'contentFilter',
    'connectError',
    'failAttempts',
  ]);
  for (const key of Object.keys(input)) if (!allowed.has(key)) throw badMock(`__mock.${key} is not a mock directive`);
  const nonNegativeInt = (key: string) => {
    const v = input[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw badMock(`__mock.${key} must be a non-negative integer`);
    return v;
  };
  const flag = (key: string) => {
    const v = input[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'boolean') throw badMock(`__mock.${key} must be a boolean`);
    return v;
  };
  const status = nonNegativeInt('status');
  if (status !== undefined && ![400, 401, 403, 429, 500, 502, 503].includes(status))
    throw badMock('__mock.status must be one of 400, 401, 403, 429, 500, 502, 503');
  return {
    latencyMs: nonNegativeInt('latencyMs'),
    status: status as MockDirective['status'],
    retryAfterSeconds: nonNegativeInt('retryAfterSeconds'),
    timeout: flag('timeout'),
    malformed: flag('malformed'),
    contentFilter: flag('contentFilter'),
    connectError: flag('connectError'),
    failAttempts: nonNegativeInt('failAttempts'),
  };
}
