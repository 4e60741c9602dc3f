import { describe, expect, it } from 'vitest';
import { manualClock, systemClock } from '../../../platform/clock.js';
import { Breakers } from '../../../subgraphs/ai/providers/breakers.js';
import { callWithFallbacks, type CallEngineDeps } from '../../../subgraphs/ai/providers/call-engine.js';
import { createMockProvider } from '../../../subgraphs/ai/providers/mock.js';
import {
  ProviderError,
  type ModelProvider,
  type MockDirective,
  type ProviderRequest,
} from '../../../subgraphs/ai/providers/provider.js';

/** A scripted provider: each call takes the next behaviour (an error kind to throw, or 'ok'). */
function scripted(
  name: string,
  script: Array<ProviderError | 'ok' | 'hang'>,
  timeoutMs = 1000,
): ModelProvider & { calls: ProviderRequest[] } {
  const calls: ProviderRequest[] = [];
  return {
    name,
    residencies: ['*'],
    timeoutMs,
    calls,
    async complete(request) {
      calls.push(request);
      const step = script[Math.min(calls.length - 1, script.length - 1)];
      if (step === 'ok') return { text: `${name} answer`, model: request.model };
      if (step === 'hang') {
        return new Promise((_, reject) =>
          request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true }),
        );
      }
      throw step;
    },
  };
}

function engine(providers: ModelProvider[], overrides: Partial<CallEngineDeps> = {}) {
  const delays: number[] = [];
  const deps: CallEngineDeps = {
    providers: new Map(providers.map((p) => [p.name, p])),
    breakers: new Breakers({ failureThreshold: 3, cooldownMs: 60_000 }, systemClock),
    retries: 1,
    backoff: { baseMs: 100, maxMs: 1000, retryAfterMaxMs: 5000 },
    clock: systemClock,
    random: () => 0.5,
    // Records the backoff instead of waiting: the decision is what is under test, not the clock.
    sleep: async (ms) => {
      delays.push(ms);
    },
    ...overrides,
  };
  return { deps, delays };
}

const mock = (mockDirective?: MockDirective) => ({
  prompt: 'Summarise: chest pain',
  maxOutputTokens: 64,
  mock: mockDirective,
  deadlineAt: Date.now() + 30_000,
});
const targets = [
  { provider: 'primary', model: 'gpt-x' },
  { provider: 'mock', model: 'mock-1' },
];
const mockProvider = () => createMockProvider({ residencies: ['*'], timeoutMs: 1000, faultInjection: true });

describe('fallback to mock', () => {
  it.each([
    ['500', new ProviderError('server_error', 'HTTP 500', { status: 500 }), '500'],
    ['429', new ProviderError('rate_limited', 'HTTP 429', { status: 429 }), '429'],
  ])('falls back when the primary keeps answering %s, after one retry', async (_label, failure, code) => {
    const primary = scripted('primary', [failure]);
    const { deps, delays } = engine([primary, mockProvider()]);
    const result = await callWithFallbacks(deps, targets, mock());
    expect(result.ok).toBe(true);
    expect(result.ok && result.target.provider).toBe('mock');
    expect(primary.calls.length).toBe(2);
    expect(delays).toEqual([50]);
    expect(result.attempts.map((a) => [a.provider, a.attempt, a.outcome, a.errorCode ?? null])).toEqual([
      ['primary', 1, failure.kind, code],
      ['primary', 2, failure.kind, code],
      ['mock', 1, 'ok', null],
    ]);
  });

  it('falls back when the primary times out, aborting the hung call', async () => {
    const primary = scripted('primary', ['hang'], 20);
    const { deps } = engine([primary, mockProvider()], { retries: 0 });
    const result = await callWithFallbacks(deps, targets, mock());
    expect(result.ok && result.target.provider).toBe('mock');
    expect(result.attempts[0]).toMatchObject({ provider: 'primary', outcome: 'timeout' });
    expect(primary.calls[0].signal.aborted).toBe(true);
  });

  it('waits for a short Retry-After and skips to the fallback on a long one', async () => {
    const short = scripted('primary', [new ProviderError('rate_limited', '429', { status: 429, retryAfterMs: 1200 }), 'ok']);
    const first = engine([short, mockProvider()]);
    const ok = await callWithFallbacks(first.deps, targets, mock());
    expect(ok.ok && ok.target.provider).toBe('primary');
    expect(first.delays).toEqual([1200]);

    const long = scripted('primary', [new ProviderError('rate_limited', '429', { status: 429, retryAfterMs: 60_000 })]);
    const second = engine([long, mockProvider()]);
    const fellBack = await callWithFallbacks(second.deps, targets, mock());
    expect(fellBack.ok && fellBack.target.provider).toBe('mock');
    expect(long.calls.length).toBe(1);
    expect(second.delays).toEqual([]);
  });
});

describe('retries only what is retryable', () => {
  it.each([
    ['400', new ProviderError('bad_request', 'HTTP 400', { status: 400 })],
    ['401', new ProviderError('auth_error', 'HTTP 401', { status: 401 })],
    ['403', new ProviderError('auth_error', 'HTTP 403', { status: 403 })],
    ['malformed body', new ProviderError('malformed_response', 'bad json')],
  ])('does not retry %s and moves on to the fallback', async (_label, failure) => {
    const primary = scripted('primary', [failure]);
    const { deps, delays } = engine([primary, mockProvider()], { retries: 3 });
    const result = await callWithFallbacks(deps, targets, mock());
    expect(primary.calls.length).toBe(1);
    expect(delays).toEqual([]);
    expect(result.ok && result.target.provider).toBe('mock');
  });

  it('stops at a content filter: blocked, and no other provider sees the content', async () => {
    const primary = scripted('primary', [new ProviderError('content_filter', 'filtered', { status: 400 })]);
    const fallback = scripted('mock', ['ok']);
    const { deps } = engine([primary, fallback], { retries: 3 });
    const result = await callWithFallbacks(deps, targets, mock());
    expect(result).toMatchObject({ ok: false, blocked: true });
    expect(fallback.calls.length).toBe(0);
  });

  it('retries a transient failure and succeeds on the same provider', async () => {
    const primary = scripted('primary', [new ProviderError('connect_error', 'ECONNREFUSED'), 'ok']);
    const { deps } = engine([primary, mockProvider()]);
    const result = await callWithFallbacks(deps, targets, mock());
    expect(result.ok && result.target.provider).toBe('primary');
    expect(result.attempts.map((a) => a.outcome)).toEqual(['connect_error', 'ok']);
  });
});

describe('breaker in the call path', () => {
  it('skips an open provider without calling it, and calls it again after the cool-down', async () => {
    const clock = manualClock();
    const primary = scripted('primary', [new ProviderError('server_error', '500', { status: 500 })]);
    const { deps } = engine([primary, mockProvider()], {
      retries: 0,
      clock,
      breakers: new Breakers({ failureThreshold: 2, cooldownMs: 1000 }, clock),
    });
    const input = { ...mock(), deadlineAt: clock.now().getTime() + 1_000_000 };
    await callWithFallbacks(deps, targets, input);
    await callWithFallbacks(deps, targets, input);
    expect(primary.calls.length).toBe(2);
    const skipped = await callWithFallbacks(deps, targets, input);
    expect(primary.calls.length).toBe(2);
    expect(skipped.attempts[0]).toMatchObject({ provider: 'primary', outcome: 'skipped_open_circuit' });
    expect(skipped.ok && skipped.target.provider).toBe('mock');

    clock.advance(1000);
    primary.calls.length = 0;
    const probe = scripted('primary', ['ok']);
    deps.providers = new Map([...deps.providers, ['primary', probe]]);
    const recovered = await callWithFallbacks(deps, targets, input);
    expect(recovered.ok && recovered.target.provider).toBe('primary');
    expect(deps.breakers.state('primary')).toBe('closed');
  });
});

describe('the end of the chain', () => {
  it('fails when every target fails, recording each attempt', async () => {
    const { deps } = engine([mockProvider()], { retries: 1 });
    const result = await callWithFallbacks(
      deps,
      [
        { provider: 'unconfigured', model: 'x' },
        { provider: 'mock', model: 'mock-1' },
      ],
      mock({ status: 503 }),
    );
    expect(result.ok).toBe(false);
    expect(result.attempts.map((a) => [a.provider, a.outcome])).toEqual([
      ['unconfigured', 'not_configured'],
      ['mock', 'server_error'],
      ['mock', 'server_error'],
    ]);
  });

  it('starts no attempt after the deadline', async () => {
    const primary = scripted('primary', ['ok']);
    const { deps } = engine([primary]);
    const result = await callWithFallbacks(deps, [{ provider: 'primary', model: 'x' }], {
      ...mock(),
      deadlineAt: Date.now() - 1,
    });
    expect(result.ok).toBe(false);
    expect(primary.calls.length).toBe(0);
    expect(result.attempts[0].outcome).toBe('deadline_exceeded');
  });

  it('hands the __mock directive to the mock provider only', async () => {
    const primary = scripted('primary', ['ok']);
    const { deps } = engine([primary]);
    await callWithFallbacks(deps, [{ provider: 'primary', model: 'x' }], mock({ status: 500 }));
    expect(primary.calls[0].mock).toBeUndefined();
  });
});
