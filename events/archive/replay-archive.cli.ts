// `npm run events:replay-archive -- --since <ISO> --until <ISO> [--tenant <id>] [--type <event type>] [--dry-run]`:
// re-publishes events of the outbox's cold archive (published rows, kept OUTBOX_ARCHIVE_MONTHS) to
// NATS_URL, in their original order, a page at a time (events/archive/outbox-archive.ts).
import { parseArgs } from 'node:util';
import { checkedPlatformConfig } from '../../platform/config/production.js';
import { openDatabase } from '../../platform/db/database.js';
import { configOrExit, startOrExit } from '../../platform/lifecycle/entrypoint.js';
import { AppError, isAppError } from '../../platform/errors/errors.js';
import { silentLogger } from '../../platform/observability/logger.js';
import { parseArchiveReplayArgs, type ArchiveReplayArgs } from './archive-replay.logic.js';
import { connectNats } from '../bus/create-bus.js';
import { replayFromArchive } from './outbox-archive.js';

const USAGE = `Usage: npm run events:replay-archive -- --since <ISO instant> --until <ISO instant> [--tenant <tenant id>] [--type <event type>] [--dry-run]

Re-publishes the events the outbox relay published (the Postgres cold archive, kept
OUTBOX_ARCHIVE_MONTHS) that were written in [since, until), to their subjects on NATS_URL, in their
original order. Nats-Msg-Id is the event id, as when the relay sent them: an event still on its
stream within the duplicate window is counted as a duplicate, not sent twice, so a run can be
repeated. --dry-run counts without publishing. Prints one JSON line:
{"matched":n,"published":n,"duplicates":n,"dryRun":false,...}

Exit codes: 0 done; 1 the database or NATS cannot be reached, or a publish failed (the JSON on
stderr says how far it got); 2 a bad argument or configuration.

  NATS_URL=nats://127.0.0.1:4222 DATABASE_URL=postgresql://... npm run events:replay-archive -- \\
    --since 2026-01-01T00:00:00Z --until 2026-02-01T00:00:00Z --type catalog.course_version.published`;

function fail(error: AppError, code: number): never {
  console.error(`${error.code}: ${error.message}`);
  if (error.details) console.error(JSON.stringify(error.details));
  process.exit(code);
}

/** The options, or exit 2 with the code of the first mistake. */
function argumentsOrExit(): ArchiveReplayArgs {
  let values;
  try {
    values = parseArgs({
      options: {
        since: { type: 'string' },
        until: { type: 'string' },
        tenant: { type: 'string' },
        type: { type: 'string' },
        'dry-run': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    return fail(new AppError('archive_replay.argument_unknown', `${(error as Error).message}\n\n${USAGE}`), 2);
  }
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  try {
    return parseArchiveReplayArgs(values);
  } catch (error) {
    if (isAppError(error)) return fail(error, 2);
    throw error;
  }
}

const args = argumentsOrExit();
const config = configOrExit(checkedPlatformConfig('replay-archive'));
if (!config.natsUrl) {
  fail(
    new AppError(
      'archive_replay.nats_required',
      'events:replay-archive needs NATS_URL: the in-process bus of `npm start` without it lives inside that process',
    ),
    2,
  );
}
const { database, bus } = await startOrExit(async () => ({
  database: await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: 1,
    logger: silentLogger,
    preparedStatements: config.dbPreparedStatements,
  }),
  // An operator at a terminal: a server that does not answer is said at once, not retried.
  bus: await connectNats(config.natsUrl!, silentLogger, 0),
}));
let exitCode = 0;
try {
  const outcome = await replayFromArchive(database.prisma, bus, args, { dryRun: args.dryRun });
  console.log(JSON.stringify({ ...outcome, dryRun: args.dryRun }));
} catch (error) {
  if (!isAppError(error)) throw error;
  console.error(`${error.code}: ${error.message}`);
  console.error(JSON.stringify(error.details ?? {}));
  exitCode = 1;
} finally {
  await bus.close().catch(() => undefined);
  await database.close().catch(() => undefined);
}
process.exit(exitCode);
