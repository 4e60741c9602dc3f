import type { Dispatcher } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { attemptFetch } from '../../../gateway/subgraph-calls/subgraph-fetch.js';

/**
 * A dispatcher that hands back the signal each request was sent with and answers when told to
 * (or never), so the attempt's deadline can be driven by the test's clock alone.
 */
function scriptedDispatcher() {
  const signals: AbortSignal[] = [];
  const dispatcher = {
    request(options: { signal: AbortSignal }) {
      signals.push(options.signal);
      return new Promise((resolve, reject) => {
        options.signal.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { code: 'UND_ERR_ABORTED' })));
        if (signals.length === 1) resolve({ statusCode: 200, body: { text: async () => '{"data":{"ok":true}}' } });
      });
    },
  } as unknown as Dispatcher;
  return { dispatcher, signals };
}

const request = { headers: {}, body: '{}' };

describe("a subgraph attempt's deadline", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ends an attempt that gets no answer once its time is up, as a timeout', async () => {
    const { dispatcher } = scriptedDispatcher();
    await attemptFetch(dispatcher, 'http://replica-a/graphql', request, 50); // the first answers
    // A minute: only the test's clock can end it within the test's time (it is one timer of the
    // process's own, not `AbortSignal.timeout`'s, which no clock but the real one drives).
    const hanging = attemptFetch(dispatcher, 'http://replica-a/graphql', request, 60_000);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(60_000);
    await expect(hanging).resolves.toEqual({ kind: 'unavailable', reason: 'no answer within 60000 ms', sent: true });
  });

  it('is cleared when the attempt is answered: it never fires afterwards and leaves no timer behind', async () => {
    const { dispatcher, signals } = scriptedDispatcher();
    const outcome = await attemptFetch(dispatcher, 'http://replica-a/graphql', request, 50);
    expect(outcome).toEqual({ kind: 'answered', status: 200, answer: { data: { ok: true } } });
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(signals[0].aborted).toBe(false);
  });
});
