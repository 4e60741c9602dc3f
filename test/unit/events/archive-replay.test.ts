import { describe, expect, it } from 'vitest';
import { parseArchiveReplayArgs } from '../../../events/archive/archive-replay.logic.js';
import { AppError } from '../../../platform/errors/errors.js';
import { newId } from '../../../platform/ids.js';

/** The arguments of `npm run events:replay-archive` (the command itself: test/integration/events/replay-archive-cli.test.ts). */
describe('archive replay arguments', () => {
  const range = { since: '2026-01-01T00:00:00Z', until: '2026-02-01T00:00:00+01:00' };

  it('takes a range of instants with their zone, and optional tenant, type and dry run', () => {
    const tenant = newId('tenant');
    expect(parseArchiveReplayArgs({ ...range, tenant, type: 'catalog.course_version.published', 'dry-run': true })).toEqual({
      since: new Date('2026-01-01T00:00:00Z'),
      until: new Date('2026-01-31T23:00:00Z'),
      tenantId: tenant,
      eventType: 'catalog.course_version.published',
      dryRun: true,
    });
    expect(parseArchiveReplayArgs({ since: '2026-01-01T00:00:00.5Z', until: '2026-01-01T00:01Z' })).toMatchObject({
      dryRun: false,
    });
  });

  it.each([
    [{ until: range.until }, 'archive_replay.argument_missing', 'since'],
    [{ since: range.since }, 'archive_replay.argument_missing', 'until'],
    [{ ...range, since: 'yesterday' }, 'archive_replay.argument_invalid', 'since'],
    [{ ...range, since: '2026-01-01' }, 'archive_replay.argument_invalid', 'since'],
    [{ ...range, until: '2026-02-30T00:00:00Z' }, 'archive_replay.argument_invalid', 'until'],
    [{ since: range.until, until: range.since }, 'archive_replay.range_empty', 'since'],
    [{ since: range.since, until: range.since }, 'archive_replay.range_empty', 'since'],
    [{ ...range, tenant: 'acme' }, 'archive_replay.argument_invalid', 'tenant'],
    [{ ...range, type: 'Course' }, 'archive_replay.argument_invalid', 'type'],
  ])('refuses %j with %s naming --%s', (raw, code, option) => {
    let thrown: unknown;
    try {
      parseArchiveReplayArgs(raw);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect(thrown).toMatchObject({ code, details: { option } });
    expect((thrown as Error).message).toContain(`--${option}`);
  });
});
