import { AppError, isAppError } from '../../../platform/errors/errors.js';
import { validateFeatureKey } from '../routing/routing.logic.js';

/**
 * Phase 2: "pre-gateway AI-assisted content backfilled as AIProvenance records carrying
 * legacy_backfill=true". Each row is checked on its own, so one bad row costs only itself; rows are
 * keyed by the legacy system's id, which makes a re-run of the same export a no-op.
 */
export const MAX_BACKFILL_ROWS = 500;

export interface LegacyRowInput {
  legacyId: string;
  featureKey: string;
  createdAt: Date;
  actorId: string;
  actorType?: string | null;
  provider?: string | null;
  model?: string | null;
  outputHash?: string | null;
  facilityId?: string | null;
  specialty?: string | null;
  subjectRef?: string | null;
}

export interface LegacyRecord {
  legacyId: string;
  featureKey: string;
  createdAt: Date;
  actorType: string;
  actorId: string;
  provider: string | null;
  model: string | null;
  outputHash: string | null;
  facilityId: string | null;
  specialty: string | null;
  subjectRef: string | null;
}

export interface RowError {
  index: number;
  legacyId: string | null;
  code: string;
  message: string;
}

const LEGACY_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
const HASH_RE = /^sha256:[0-9a-f]{64}$/;
const ACTOR_TYPES = new Set(['user', 'service']);
/** Before this the organisation had no AI-assisted content: an older date is a unit mistake. */
const EARLIEST = Date.UTC(2015, 0, 1);
const FUTURE_SKEW_MS = 5 * 60_000;

class RowProblem extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function bounded(value: string | null | undefined, field: string, max: number): string | null {
  if (value == null) return null;
  if (value.trim() === '' || value.length > max)
    throw new RowProblem('backfill.invalid_field', `${field} is 1-${max} characters or null`);
  return value;
}

export function validateLegacyRow(row: LegacyRowInput, now: Date): LegacyRecord {
  if (typeof row.legacyId !== 'string' || !LEGACY_ID_RE.test(row.legacyId)) {
    throw new RowProblem(
      'backfill.invalid_legacy_id',
      'legacyId is 1-128 letters, digits or ._:/- starting with a letter or digit',
    );
  }
  let featureKey: string;
  try {
    featureKey = validateFeatureKey(row.featureKey);
  } catch {
    throw new RowProblem(
      'backfill.invalid_feature_key',
      'featureKey is lower-case dot-separated words, e.g. patient_chart.note_summary',
    );
  }
  const at = row.createdAt instanceof Date ? row.createdAt.getTime() : Number.NaN;
  if (Number.isNaN(at) || at < EARLIEST || at > now.getTime() + FUTURE_SKEW_MS) {
    throw new RowProblem('backfill.invalid_created_at', 'createdAt must be a date between 2015-01-01 and now');
  }
  const actorId = bounded(row.actorId, 'actorId', 200);
  if (actorId === null) throw new RowProblem('backfill.invalid_field', 'actorId is required');
  const actorType = row.actorType ?? (actorId.startsWith('usr_') ? 'user' : 'service');
  if (!ACTOR_TYPES.has(actorType)) throw new RowProblem('backfill.invalid_field', 'actorType is user or service');
  if (row.outputHash != null && !HASH_RE.test(row.outputHash)) {
    throw new RowProblem('backfill.invalid_output_hash', 'outputHash is sha256: followed by 64 lower-case hex characters');
  }
  return {
    legacyId: row.legacyId,
    featureKey,
    createdAt: new Date(at),
    actorType,
    actorId,
    provider: bounded(row.provider, 'provider', 64),
    model: bounded(row.model, 'model', 128),
    outputHash: row.outputHash ?? null,
    facilityId: bounded(row.facilityId, 'facilityId', 128),
    specialty: bounded(row.specialty, 'specialty', 128),
    subjectRef: bounded(row.subjectRef, 'subjectRef', 256),
  };
}

/**
 * Splits a batch into valid records (with their indexes) and per-row errors. A legacy id that
 * appears twice in one batch is an error on its second row: which of the two to keep is not ours
 * to guess.
 */
export function partitionBatch(
  rows: readonly LegacyRowInput[],
  now: Date,
): { valid: Array<{ index: number; record: LegacyRecord }>; errors: RowError[] } {
  if (rows.length > MAX_BACKFILL_ROWS) {
    throw new AppError('BAD_USER_INPUT', `At most ${MAX_BACKFILL_ROWS} rows per call`, {
      details: { argument: 'rows', max: MAX_BACKFILL_ROWS },
    });
  }
  const valid: Array<{ index: number; record: LegacyRecord }> = [];
  const errors: RowError[] = [];
  const seen = new Set<string>();
  rows.forEach((row, index) => {
    const legacyId = typeof row.legacyId === 'string' ? row.legacyId : null;
    try {
      const record = validateLegacyRow(row, now);
      if (seen.has(record.legacyId))
        throw new RowProblem('backfill.duplicate_in_batch', 'legacyId appears earlier in this batch');
      seen.add(record.legacyId);
      valid.push({ index, record });
    } catch (error) {
      if (error instanceof RowProblem) errors.push({ index, legacyId, code: error.code, message: error.message });
      else if (isAppError(error)) errors.push({ index, legacyId, code: error.code, message: error.message });
      else throw error;
    }
  });
  return { valid, errors };
}
