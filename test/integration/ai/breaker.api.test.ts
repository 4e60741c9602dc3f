import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../../platform/clock.js';
import { ASSIST, assistInput, PROVENANCE, startAiHarness, startFakeOpenAi, type AiHarness, type FakeOpenAi } from './support.js';
import { testDatabaseKind } from '../../support/database.js';

type Assist = { assist: { provenanceId: string; provider: string } };
type Attempts = { provenance: { attempts: Array<{ provider: string; outcome: string }> } };

describe('circuit breaker through the assist pipeline', () => {
  let ai: AiHarness;
  let openai: FakeOpenAi;
  const clock = manualClock('2026-11-21T10:00:00Z');
  const triage = assistInput('portal.triage', { message: 'dizzy' });

  beforeAll(async () => {
    openai = await startFakeOpenAi();
    ai = await startAiHarness(
      testDatabaseKind(),
      { OPENAI_BASE_URL: openai.baseUrl, AI_PROVIDER_RETRIES: '0', AI_BREAKER_FAILURES: '2', AI_BREAKER_COOLDOWN_MS: '30000' },
      { clock },
    );
  });
  afterAll(async () => {
    await ai?.close();
    await openai?.close();
  });

  const health = async () =>
    (
      (await (await fetch(new URL('/v1/ai/health', ai.url))).json()) as {
        dependencies: { providers: Array<{ name: string; circuit: string }> };
      }
    ).dependencies.providers.find((p) => p.name === 'openai-compatible')!.circuit;

  it('opens after consecutive failures, skips the provider while open, and recovers after the cool-down', async () => {
    openai.script.push({ status: 503, body: {} }, { status: 503, body: {} });
    for (let i = 0; i < 2; i++) expect((await ai.gql<Assist>(ASSIST, triage)).data!.assist.provider).toBe('mock');
    expect(openai.requests.length).toBe(2);
    expect(await health()).toBe('open');

    const skipped = await ai.gql<Assist>(ASSIST, triage);
    expect(skipped.data!.assist.provider).toBe('mock');
    expect(openai.requests.length).toBe(2);
    const row = await ai.gql<Attempts>(PROVENANCE, { id: skipped.data!.assist.provenanceId });
    expect(row.data!.provenance.attempts.map((a) => [a.provider, a.outcome])).toEqual([
      ['openai-compatible', 'skipped_open_circuit'],
      ['mock', 'ok'],
    ]);

    clock.advance(30_000);
    expect(await health()).toBe('half_open');
    const probe = await ai.gql<Assist>(ASSIST, triage);
    expect(probe.data!.assist.provider).toBe('openai-compatible');
    expect(openai.requests.length).toBe(3);
    expect(await health()).toBe('closed');
  });
});
