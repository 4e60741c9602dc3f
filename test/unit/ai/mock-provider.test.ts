import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors/errors.js';
import { createMockProvider, parseMockDirective } from '../../../subgraphs/ai/providers/mock.js';
import { ProviderError, type MockDirective } from '../../../subgraphs/ai/providers/provider.js';
import { rejected } from './catching.js';

const request = (mock?: MockDirective, attempt = 1, signal = new AbortController().signal) => ({
  model: 'mock-1',
  prompt: 'Summarise: BP 120/80',
  maxOutputTokens: 64,
  attempt,
  signal,
  mock,
});

describe('mock provider', () => {
  const provider = createMockProvider({ residencies: ['*'], timeoutMs: 1000, faultInjection: true });

  it('answers deterministically from model and prompt', async () => {
    const a = await provider.complete(request());
    const b = await provider.complete(request());
    const c = await provider.complete({ ...request(), prompt: 'other' });
    expect(a.text).toBe(b.text);
    expect(a.text).not.toBe(c.text);
    expect(a.usage?.inputTokens).toBeGreaterThan(0);
  });

  it('injects each fault the directive names', async () => {
    expect(await rejected(ProviderError, provider.complete(request({ status: 429, retryAfterSeconds: 2 })))).toMatchObject({
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 2000,
    });
    expect((await rejected(ProviderError, provider.complete(request({ status: 500 })))).kind).toBe('server_error');
    expect((await rejected(ProviderError, provider.complete(request({ status: 401 })))).kind).toBe('auth_error');
    expect((await rejected(ProviderError, provider.complete(request({ malformed: true })))).kind).toBe('malformed_response');
    expect((await rejected(ProviderError, provider.complete(request({ contentFilter: true })))).kind).toBe('content_filter');
    expect((await rejected(ProviderError, provider.complete(request({ connectError: true })))).kind).toBe('connect_error');
  });

  it('hangs on timeout until the caller aborts', async () => {
    const controller = new AbortController();
    const pending = provider.complete(request({ timeout: true }, 1, controller.signal));
    controller.abort(new Error('deadline'));
    await expect(pending).rejects.toThrow('deadline');
  });

  it('limits the fault to the first n attempts', async () => {
    await expect(provider.complete(request({ status: 503, failAttempts: 1 }, 1))).rejects.toBeInstanceOf(ProviderError);
    await expect(provider.complete(request({ status: 503, failAttempts: 1 }, 2))).resolves.toMatchObject({ model: 'mock-1' });
  });

  it('ignores directives when fault injection is off', async () => {
    const safe = createMockProvider({ residencies: ['*'], timeoutMs: 1000, faultInjection: false });
    await expect(safe.complete(request({ status: 500 }))).resolves.toMatchObject({ model: 'mock-1' });
  });
});

describe('__mock directive parsing', () => {
  it('accepts the documented fields', () => {
    expect(parseMockDirective({ latencyMs: 5, status: 429, retryAfterSeconds: 1, failAttempts: 2 })).toMatchObject({
      latencyMs: 5,
      status: 429,
      retryAfterSeconds: 1,
      failAttempts: 2,
    });
    expect(parseMockDirective(undefined)).toBeUndefined();
  });

  it.each([[{ bogus: 1 }], [{ status: 418 }], [{ latencyMs: -1 }], [{ timeout: 'yes' }], ['string'], [[1]]])(
    'refuses %j as BAD_USER_INPUT',
    (value) => {
      try {
        parseMockDirective(value);
        throw new Error('accepted');
      } catch (error) {
        expect(error).toBeInstanceOf(AppError);
        expect((error as AppError).code).toBe('BAD_USER_INPUT');
      }
    },
  );
});
