import { describe, expect, it } from 'vitest';
import { manualClock } from '../../../platform/clock.js';
import type { Db } from '../../../platform/db/database.js';
import { AppError } from '../../../platform/errors/errors.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import type { PromptTemplate } from '../../../prisma/generated/client.js';
import { parseAssistInput, type AssistEnd } from '../../../subgraphs/ai/assist/assist.logic.js';
import type { SnapshotCache } from '../../../subgraphs/ai/assist/assist.repo.js';
import type { AssistDeps, AssistDraft, AssistRequest } from '../../../subgraphs/ai/assist/assist.request.js';
import {
  ASSIST_STAGES,
  callProviders,
  moderateInput,
  openDraft,
  releaseDecision,
  render,
  route,
  runStages,
  type Stage,
} from '../../../subgraphs/ai/assist/assist.stages.js';
import type { AuditSink } from '../../../subgraphs/ai/audit/audit.sink.js';
import type { ModerationVerdict } from '../../../subgraphs/ai/moderation/moderation.logic.js';
import type { Moderator } from '../../../subgraphs/ai/moderation/moderator.js';
import { Breakers } from '../../../subgraphs/ai/providers/breakers.js';
import type { ModelProvider } from '../../../subgraphs/ai/providers/provider.js';
import { providerRegistry } from '../../../subgraphs/ai/providers/registry.js';
import type { QuotaReservation, QuotaService } from '../../../subgraphs/ai/quota/quota.service.js';
import { noReceipts } from '../../../subgraphs/ai/provenance/receipts/receipt.repo.js';

/**
 * The assist stages without a database: each is a function of its dependencies, the request and
 * the draft so far, so the pipeline's decisions are testable with fakes and a manual clock.
 */

const TENANT = 'ten_01JD0000000000000000000A00';
const NOTE = 'patient_chart.note_summary';

const template = {
  id: 'tpl_01JD0000000000000000000T00',
  tenantId: null,
  featureKey: NOTE,
  version: 3,
  body: 'Summarise: {{note}}',
  variables: ['note'],
  hash: 'sha256:template',
  active: true,
  publishedBy: 'usr_01JD0000000000000000000U00',
  createdAt: new Date('2026-11-01T00:00:00Z'),
} satisfies PromptTemplate;

/** A provider that answers after `latencyMs` of the manual clock, counting its calls. */
function provider(clock: ReturnType<typeof manualClock>, options: { latencyMs?: number; fail?: boolean } = {}) {
  const calls: string[] = [];
  const model: ModelProvider = {
    name: 'mock',
    residencies: ['EU'],
    timeoutMs: 1000,
    async complete(request) {
      calls.push(request.prompt);
      clock.advance(options.latencyMs ?? 0);
      if (options.fail) throw new AppError('INTERNAL_SERVER_ERROR', 'adapter bug');
      return { text: `answer to ${request.prompt}`, model: 'mock-1', usage: { inputTokens: 5, outputTokens: 7 } };
    },
  };
  return { model, calls };
}

function moderator(flag: Partial<Record<'input' | 'output', boolean>> = {}): Moderator & { texts: string[] } {
  const texts: string[] = [];
  return {
    name: 'fake',
    texts,
    async classify({ stage, text }): Promise<ModerationVerdict> {
      texts.push(text);
      const flagged = flag[stage] ?? false;
      return { flagged, classifier: 'fake', categories: flagged ? ['violence'] : [], reasons: [] };
    },
  };
}

function setup(options: { hitlMode?: string | null; moderator?: Moderator; latencyMs?: number; fail?: boolean } = {}) {
  const clock = manualClock('2026-11-21T10:00:00Z');
  const { model, calls } = provider(clock, options);
  const settled: Array<number | undefined> = [];
  const quota: QuotaService = {
    reserve: async (tenantId, _quota, tokens) => ({ tenantId, tokens, mode: 'disabled' }),
    settle: async (_reservation, tokens) => void settled.push(tokens),
    health: async () => ({ status: 'up', store: 'memory' }),
  };
  const deps: AssistDeps = {
    // The stages below read no table (no residency needs an assessment); the record stage is not run here.
    db: {} as Db,
    receipts: noReceipts,
    quota,
    registry: providerRegistry([model]),
    callPolicy: {
      breakers: new Breakers({ failureThreshold: 3, cooldownMs: 1000 }, clock),
      retries: 0,
      backoff: { baseMs: 1, maxMs: 1, retryAfterMaxMs: 1 },
      random: () => 0.5,
      sleep: async () => {},
    },
    audit: {} as AuditSink,
    snapshots: {} as SnapshotCache,
    settings: {
      maxOutputTokens: 64,
      maxPromptChars: 10_000,
      deadlineMs: 30_000,
      reviewTextRetentionHours: 24,
      assessmentResidencies: ['AF'],
      moderation: { features: [NOTE] },
    },
    moderator: options.moderator,
    clock,
  };
  const request = (variables: Record<string, unknown>, extra: { residency?: string } = {}): AssistRequest => {
    const createdAt = clock.now();
    return {
      caller: {
        tenantId: TENANT,
        subject: 'svc-consumer',
        requestId: 'req-1',
        traceparent: '00-x-y-01',
        locales: ['en'],
        logger: silentLogger,
      },
      input: parseAssistInput(
        { featureKey: NOTE, variables, context: { facilityId: 'fac-1', specialty: 'cardiology' }, ...extra },
        ['en'],
      ),
      snapshot: {
        tenant: {
          quota: { enabled: false, requestsPerMinute: 0, tokensPerDay: 0 },
          retentionClass: 'operational',
          dataResidency: 'EU',
        },
        template,
        rules: [
          {
            ruleId: 'rtr_global',
            tenantId: null,
            featureKey: null,
            residency: null,
            activeVersion: 2,
            primary: { provider: 'mock', model: 'mock-1' },
          },
        ],
        hitlMode: options.hitlMode ?? null,
        flags: { hitlEnabled: true, moderationEnabled: true, multiProviderEnabled: true },
      },
      reservation: { tenantId: TENANT, tokens: 100, mode: 'disabled' } satisfies QuotaReservation,
      provenanceId: 'prv_01JD0000000000000000000P00',
      startedAtMs: createdAt.getTime(),
      createdAt,
      deadlineAtMs: createdAt.getTime() + 30_000,
      moderationRequired: true,
      moderating: options.moderator !== undefined,
    };
  };
  return { clock, deps, calls, settled, request };
}

const failure = (end: AssistEnd | undefined) =>
  end?.kind === 'failed' && end.error instanceof AppError ? end.error.code : undefined;

describe('assist stages', () => {
  it('run in order to a release; each returns a new draft and leaves the one it was given as it was', async () => {
    const { deps, request, calls, settled } = setup({ latencyMs: 250, moderator: moderator() });
    const admitted = request({ note: 'BP 150/95' });
    const start = openDraft(admitted);
    const before = structuredClone(start);
    const { draft, end } = await runStages(deps, admitted, start);
    expect(start).toEqual(before);
    expect(end).toMatchObject({
      kind: 'released',
      release: { status: 'completed', returnText: true },
      text: 'answer to Summarise: BP 150/95',
    });
    expect(calls).toEqual(['Summarise: BP 150/95']);
    expect(settled).toEqual([12]);
    expect(draft.record).toMatchObject({
      templateId: template.id,
      templateVersion: 3,
      ruleId: 'rtr_global',
      ruleVersion: 2,
      provider: 'mock',
      model: 'mock-1',
      inputTokens: 5,
      outputTokens: 7,
      // The provider's time is read from the injected clock.
      providerLatencyMs: 250,
      moderation: { required: true, input: { flagged: false }, output: { flagged: false } },
    });
    expect(draft.record.renderedPromptHash).toMatch(/^sha256:/);
  });

  it('render: a missing variable fails the request with the template on record and no prompt hash', () => {
    const { deps, request } = setup();
    const admitted = request({});
    const step = render(deps, admitted, openDraft(admitted));
    expect(failure(step.end)).toBe('BAD_USER_INPUT');
    expect(step.draft.record).toMatchObject({
      templateId: template.id,
      templateHash: 'sha256:template',
      renderedPromptHash: null,
    });
  });

  it('route: with no provider for the residency the rule and the passed-over targets are on record', async () => {
    const { deps, request } = setup();
    const admitted = request({ note: 'x' }, { residency: 'ON_PREM' });
    const step = await route(deps, admitted, openDraft(admitted));
    expect(failure(step.end)).toBe('routing.no_provider_for_residency');
    expect(step.draft.record.ruleId).toBe('rtr_global');
    expect(step.draft.record.attempts).toEqual([
      { provider: 'mock', model: 'mock-1', attempt: 0, outcome: 'skipped_residency', latencyMs: 0, errorCode: 'residency' },
    ]);
  });

  it('moderate input: a flagged prompt is blocked before any provider is called, and its quota is left to release unused', async () => {
    const { deps, request, calls, settled } = setup({ moderator: moderator({ input: true }) });
    const { draft, end } = await runStages(deps, request({ note: 'x' }), openDraft(request({ note: 'x' })));
    expect(end).toEqual({ kind: 'blocked', code: 'moderation.blocked', categories: ['violence'] });
    expect(calls).toEqual([]);
    expect(settled).toEqual([]);
    expect(draft.quotaSettlement).toBeNull();
    expect(draft.queueMs).toBe(0);
  });

  it('moderate input: a required classifier that is missing fails the request closed', async () => {
    const { deps, request } = setup();
    const admitted = { ...request({ note: 'x' }), moderating: true };
    await expect(moderateInput(deps, admitted, { ...openDraft(admitted), prompt: 'x' })).rejects.toMatchObject({
      code: 'moderation.unavailable',
      status: 503,
    });
  });

  it('call providers: a failure of every provider settles the quota with nothing used and fails as provider.unavailable', async () => {
    const { deps, request, settled } = setup({ fail: true });
    const admitted = request({ note: 'x' });
    const { draft, end } = await runStages(deps, admitted, openDraft(admitted));
    expect(failure(end)).toBe('provider.unavailable');
    expect(settled).toEqual([0]);
    expect(draft.record.attempts.map((a) => a.outcome)).toEqual(['malformed_response']);
  });

  it('call providers: hands the quota correction on without waiting for it (it runs beside the record)', async () => {
    const { deps, request } = setup();
    let release!: () => void;
    const corrections: Array<number | undefined> = [];
    deps.quota = {
      ...deps.quota,
      settle: (_reservation, tokens) =>
        new Promise<void>((resolve) => {
          corrections.push(tokens);
          release = resolve;
        }),
    };
    const admitted = request({ note: 'x' });
    const step = await callProviders(deps, admitted, {
      ...openDraft(admitted),
      prompt: 'p',
      targets: [{ provider: 'mock', model: 'mock-1' }],
    });
    expect(corrections).toEqual([12]);
    let settled = false;
    void step.draft.quotaSettlement?.then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    release();
    await step.draft.quotaSettlement;
    expect(settled).toBe(true);
  });

  it('release decision: a required review holds the text for its retention and returns none', () => {
    const { deps, request } = setup({ hitlMode: 'required' });
    const admitted = request({ note: 'x' });
    const step = releaseDecision(deps, admitted, { ...openDraft(admitted), answer: 'held text' });
    expect(step.end).toMatchObject({
      kind: 'released',
      release: { status: 'pending_review', returnText: false, holdText: true },
    });
    expect(step.draft.record).toMatchObject({
      reviewState: 'pending',
      heldText: 'held text',
      heldTextExpiresAt: new Date('2026-11-22T10:00:00Z'),
    });
  });
});

describe('the fold over the stages', () => {
  const { deps, request } = setup();
  const admitted = request({ note: 'x' });
  const mark =
    (name: string, seen: string[]): Stage =>
    (_deps, _request, draft) => {
      seen.push(name);
      return { draft: { ...draft, prompt: `${draft.prompt ?? ''}${name}` } };
    };

  it('ends the request as failed, with the draft handed to the stage, when a stage throws; later stages do not run', async () => {
    const seen: string[] = [];
    const boom: Stage = () => {
      throw new AppError('routing.no_rule', 'none');
    };
    const { draft, end } = await runStages(deps, admitted, openDraft(admitted), [mark('a', seen), boom, mark('c', seen)]);
    expect(seen).toEqual(['a']);
    expect(failure(end)).toBe('routing.no_rule');
    expect(draft.prompt).toBe('a');
  });

  it('stops at the stage that ends the request', async () => {
    const seen: string[] = [];
    const stop: Stage = (_deps, _request, draft: AssistDraft) => ({
      draft,
      end: { kind: 'blocked', code: 'moderation.blocked', categories: [] },
    });
    const { end } = await runStages(deps, admitted, openDraft(admitted), [mark('a', seen), stop, mark('c', seen)]);
    expect(seen).toEqual(['a']);
    expect(end.kind).toBe('blocked');
  });

  it('still ends (failed) when no stage decides, so the admitted request is recorded', async () => {
    const { end } = await runStages(deps, admitted, openDraft(admitted), []);
    expect(end.kind).toBe('failed');
  });

  it('runs render, route, moderate input, call providers, moderate output and the release decision, in that order', () => {
    expect(ASSIST_STAGES.map((stage) => stage.name)).toEqual([
      'render',
      'route',
      'moderateInput',
      'callProviders',
      'moderateOutput',
      'releaseDecision',
    ]);
  });
});
