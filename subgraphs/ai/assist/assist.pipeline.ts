import { isAppError } from '../../../platform/errors/errors.js';
import type { ProvenanceRecord } from '../provenance/provenance.logic.js';
import {
  assistOutput,
  closeRecord,
  withProvenance,
  type AssistEnd,
  type AssistOutput,
  type AssistRequestInput,
  type ReleaseDecision,
} from './assist.logic.js';
import { assistRecords, recordAssist, type AssistRecords, type RecordPlan } from './assist.record.js';
import type { AssistCaller, AssistDeps, AssistDraft, AssistRequest } from './assist.request.js';
import { admit, elapsedMs, openDraft, runStages } from './assist.stages.js';

export type { AssistCaller, AssistDeps } from './assist.request.js';
export type { AssistOutput } from './assist.logic.js';

export interface AssistPipeline {
  /** Answers one assist request (released, held or blocked), or throws its error with the provenance id. */
  run(caller: AssistCaller, input: AssistRequestInput): Promise<AssistOutput>;
}

/**
 * The assist pipeline: admit → render → route → moderate input → call providers → moderate
 * output → release decision → record. Every request admitted by the quota leaves exactly one
 * provenance row, whether it completed, was held, blocked, rejected or failed.
 */
export function createAssistPipeline(deps: AssistDeps): AssistPipeline {
  // Concurrent answers' records share their commits (assist.record.ts).
  const finishing = { ...deps, records: assistRecords(deps.db, deps.receipts) };
  return {
    async run(caller, input) {
      const admission = await admit(deps, caller, input);
      if ('answered' in admission) return admission.answered;
      const { request } = admission;
      const { draft, end } = await runStages(deps, request, openDraft(request));
      return finish(finishing, request, draft, end);
    },
  };
}

/**
 * Settles an unused quota reservation, records the outcome, and answers it (or throws it). The
 * quota's correction and the record run side by side (two round trips to two stores); the answer
 * waits for both, so whoever reads the quota after an answer sees it corrected.
 */
async function finish(
  deps: AssistDeps & { records: AssistRecords },
  request: AssistRequest,
  draft: AssistDraft,
  end: AssistEnd,
): Promise<AssistOutput> {
  const settlement = draft.quotaSettlement ?? deps.quota.settle(request.reservation, 0);
  const record = closeRecord(draft.record, end, deps.clock.now(), elapsedMs(deps, request));
  let output: AssistOutput | undefined;
  try {
    output = await recordAssist(deps, request, record, recordPlan(deps, request, draft, record, end));
  } finally {
    await settlement;
  }
  logOutcome(request, record);
  if (end.kind === 'failed') throw isAppError(end.error) ? withProvenance(end.error, record.id) : end.error;
  // Counted and logged after the commit: the alert describes an output that was really released.
  if (end.kind === 'released') alertBypassedControls(deps, request, record, end.release);
  return output!;
}

function recordPlan(
  deps: AssistDeps,
  request: AssistRequest,
  draft: AssistDraft,
  record: ProvenanceRecord,
  end: AssistEnd,
): RecordPlan {
  if (end.kind === 'failed') return { holdForReview: false, bypassed: [] };
  // Measured as the provenance is written, so the caller sees nearly all the time spent here.
  const answer = (reviewTaskId: string | null) =>
    assistOutput(
      record,
      end,
      { totalMs: elapsedMs(deps, request), providerMs: record.providerLatencyMs, queueMs: draft.queueMs },
      reviewTaskId,
    );
  if (end.kind === 'blocked') return { answer, holdForReview: false, bypassed: [] };
  return { answer, holdForReview: end.release.holdText, bypassed: end.release.bypassedControls };
}

function logOutcome(request: AssistRequest, record: ProvenanceRecord): void {
  request.caller.logger.info(
    {
      provenanceId: record.id,
      featureKey: record.featureKey,
      status: record.status,
      errorCode: record.errorCode,
      provider: record.provider,
      model: record.model,
      totalMs: record.latencyMs,
      providerMs: record.providerLatencyMs,
    },
    'assist',
  );
}

/** Rollback of phase 2 ("log and alert"): an output released with a safety control switched off. */
function alertBypassedControls(
  deps: AssistDeps,
  request: AssistRequest,
  record: ProvenanceRecord,
  release: ReleaseDecision,
): void {
  if (!release.bypassed) return;
  if (release.bypassedControls.includes('review')) deps.metrics?.hitlPassthrough.inc({ feature: record.featureKey });
  request.caller.logger.warn(
    {
      provenanceId: record.id,
      featureKey: record.featureKey,
      bypassed: release.bypassedControls,
      alert: 'ai.safety_control_bypassed',
    },
    'a safety control is switched off by flag; the output passed without it',
  );
}
