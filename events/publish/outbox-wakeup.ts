import { POSTGRES_LINK } from '../../platform/config/link-liveness.js';
import pg from 'pg';
import type { Logger } from '../../platform/observability/logger.js';
import { oneLine } from '../error-text.logic.js';
import { retryDelayMs } from '../retry.logic.js';

/**
 * Commits of outbox rows, as they happen, from any process: the migration
 * 20261126130000_outbox_commit_notify makes every transaction that inserts outbox rows send one
 * NOTIFY on this channel at commit.
 */
export const OUTBOX_COMMITTED_CHANNEL = 'outbox_committed';

/** A source of "outbox rows were just committed" signals; the relay leader wakes on each. */
export interface OutboxCommitFeed {
  start(onCommit: () => void): void;
  stop(): Promise<void>;
  /** The feed is connected and listening (a lost connection is retried; the poll covers the gap). */
  listening(): boolean;
}

export interface ListenFeedOptions {
  databaseUrl: string;
  logger: Logger;
  /** pg_stat_activity's name for the listening connection. */
  applicationName?: string;
  /** Backoff after a lost or refused connection: base doubling up to max, with jitter. */
  retryBaseMs?: number;
  retryMaxMs?: number;
}

/**
 * LISTEN on a connection of its own (one per worker replica; not through a transaction-mode pooler,
 * which cannot hold a LISTEN: set OUTBOX_LISTEN=false there). It only shortens the publish delay:
 * while it is down, rows wait for the relay's poll as before, and on every (re)connection it
 * signals once, for whatever committed while nobody listened.
 */
export function listenForOutboxCommits(options: ListenFeedOptions): OutboxCommitFeed {
  const state = { running: false, listening: false, failures: 0 };
  let client: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let onCommit: () => void = () => undefined;

  const scheduleReconnect = (error: unknown) => {
    state.listening = false;
    if (!state.running || retryTimer) return;
    state.failures += 1;
    const delayMs = retryDelayMs(state.failures, { baseMs: options.retryBaseMs ?? 500, maxMs: options.retryMaxMs ?? 30_000 });
    options.logger.warn(
      { err: oneLine(error), retryInMs: delayMs },
      'outbox commit listener lost its connection; the relay polls meanwhile',
    );
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, delayMs);
    retryTimer.unref?.();
  };

  const connect = async () => {
    const next = new pg.Client({
      connectionString: options.databaseUrl,
      application_name: options.applicationName ?? 'outbox-listen',
      // An idle LISTEN connection learns of a vanished server only through keepalive probes.
      ...POSTGRES_LINK,
    });
    client = next;
    // A connection ended by the server (restart, pg_terminate_backend) reports here.
    next.on('error', (error) => {
      if (client === next) scheduleReconnect(error);
    });
    next.on('end', () => {
      if (client === next) scheduleReconnect(new Error('connection ended'));
    });
    next.on('notification', (message) => {
      if (message.channel === OUTBOX_COMMITTED_CHANNEL) onCommit();
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${OUTBOX_COMMITTED_CHANNEL}`);
    } catch (error) {
      await next.end().catch(() => undefined);
      if (client === next) scheduleReconnect(error);
      return;
    }
    if (!state.running || client !== next) {
      await next.end().catch(() => undefined);
      return;
    }
    state.listening = true;
    state.failures = 0;
    onCommit();
  };

  return {
    start(handler) {
      if (state.running) return;
      state.running = true;
      onCommit = handler;
      void connect();
    },
    async stop() {
      state.running = false;
      state.listening = false;
      clearTimeout(retryTimer);
      retryTimer = undefined;
      const last = client;
      client = undefined;
      await last?.end().catch(() => undefined);
    },
    listening: () => state.listening,
  };
}
