import { AppError } from '../../platform/errors/errors.js';
import { isId } from '../../platform/ids.js';

/**
 * The arguments of `npm run events:replay-archive`, checked before anything is opened. Each mistake
 * is an AppError with a stable code (exit code 2), naming the option.
 */
export interface ArchiveReplayArgs {
  /** Written to the outbox at or after (createdAt). */
  since: Date;
  /** Written before. */
  until: Date;
  tenantId?: string;
  eventType?: string;
  dryRun: boolean;
}

/** What node:util parseArgs gives for the command's options. */
export interface RawArchiveReplayArgs {
  since?: string;
  until?: string;
  tenant?: string;
  type?: string;
  'dry-run'?: boolean;
}

/** An instant with its zone (RFC 3339 / ISO 8601, e.g. 2026-01-31T00:00:00Z): a bare date would be read in local time. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const EVENT_TYPE = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*){2,}$/;

/** The text's calendar date exists (Date would read 2026-02-30 as 2026-03-02). */
function realDate(value: string): boolean {
  const [year, month, day] = value.slice(0, 10).split('-').map(Number);
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

function invalid(option: string, message: string): AppError {
  return new AppError('archive_replay.argument_invalid', `--${option} ${message}`, { status: 400, details: { option } });
}

function instant(option: 'since' | 'until', value: string | undefined): Date {
  if (value === undefined) {
    throw new AppError('archive_replay.argument_missing', `--${option} <ISO instant> is required`, {
      status: 400,
      details: { option },
    });
  }
  const at = new Date(value);
  if (!INSTANT.test(value) || Number.isNaN(at.getTime()) || !realDate(value)) {
    throw invalid(option, `must be an ISO 8601 instant with a zone, such as 2026-01-31T00:00:00Z (got "${value}")`);
  }
  return at;
}

export function parseArchiveReplayArgs(raw: RawArchiveReplayArgs): ArchiveReplayArgs {
  const since = instant('since', raw.since);
  const until = instant('until', raw.until);
  if (since.getTime() >= until.getTime()) {
    throw new AppError('archive_replay.range_empty', '--since must be before --until', {
      status: 400,
      details: { option: 'since' },
    });
  }
  if (raw.tenant !== undefined && !isId('tenant', raw.tenant)) throw invalid('tenant', 'must be a tenant id (ten_…)');
  if (raw.type !== undefined && !EVENT_TYPE.test(raw.type)) {
    throw invalid('type', 'must be an event type such as catalog.course_version.published');
  }
  return {
    since,
    until,
    ...(raw.tenant !== undefined ? { tenantId: raw.tenant } : {}),
    ...(raw.type !== undefined ? { eventType: raw.type } : {}),
    dryRun: raw['dry-run'] ?? false,
  };
}
