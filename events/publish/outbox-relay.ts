import os from 'node:os';
import type { Db } from '../../platform/db/database.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { MessageBus } from '../bus/event-bus.js';
import { systemClock, type Clock } from '../../platform/clock.js';
import { performance } from 'node:perf_hooks';
import { afterRelayRun, restOfRoundGapMs, type RelayTick } from './outbox-relay.logic.js';
import { oneLine } from '../error-text.logic.js';
import { relayBatch, type BatchResult } from './relay-batch.js';
import { RelayLease } from './relay-lease.js';
import { retryDelayMs } from '../retry.logic.js';

/** How long a relay holds its lease without renewing it, unless told (OUTBOX_RELAY_LEASE_SECONDS). */
export const DEFAULT_RELAY_LEASE_MS = 10_000;

/** A woken round starts at least this long after the previous one ended (outbox-relay.logic.ts). */
const ROUND_GAP_MS = 20;

export interface OutboxRelayOptions {
  db: Db;
  bus: MessageBus;
  logger: Logger;
  clock?: Clock;
  batchSize?: number;
  pollIntervalMs?: number;
  /** Backoff after a failed batch (broker down): base doubling up to max, with jitter. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** The relay's transaction spans the batch's publishes. */
  transactionTimeoutMs?: number;
  /** Prepended to each row's subject, matching `StreamOptions.subjectPrefix` (tests on a shared server). */
  subjectPrefix?: string;
  /**
   * The leadership lease's period: a holder that stops renewing (paused, partitioned) loses it
   * after this long, and another replica takes over.
   */
  leaseMs?: number;
  /** How long the leader keeps the lease while none of its batches publishes (default leaseMs). */
  progressWindowMs?: number;
  /** Names this relay in the lease row (SERVICE_INSTANCE); default host:pid. */
  instance?: string;
  /** Monotonic ms for the lease's local deadline (tests move it by hand); default performance.now(). */
  monotonicMs?: () => number;
}

/** One run of the relay; `locked` is false when another replica leads (or a GDPR redaction holds the outbox). */
export type RelayRun = BatchResult;

export interface RelayStatus {
  running: boolean;
  lastRunAt?: string;
  lastError?: string;
  consecutiveFailures: number;
  publishedTotal: number;
  /** This relay holds the leadership lease (as far as it may count on it now). */
  leader: boolean;
  /** The lease's fencing token while leader. */
  leaseToken?: string;
}

export interface OutboxRelay {
  runOnce(): Promise<RelayRun>;
  start(): void;
  /** Stops polling after the batch in hand and flushes what is pending once more. */
  stop(): Promise<void>;
  /** Wakes the poll loop now, e.g. right after a transaction that wrote events committed. */
  notify(): void;
  status(): RelayStatus;
}

export function createOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const loop = new RelayLoop(options);
  return {
    runOnce: () => loop.runOnce(),
    start: () => loop.start(),
    stop: () => loop.stop(),
    notify: () => loop.notify(),
    status: () => loop.status(),
  };
}

/** The relay's poll loop: a run, then the next one at once, after the poll interval, or after a backoff. */
class RelayLoop {
  private readonly clock: Clock;
  private readonly batchSize: number;
  private readonly leaseMs: number;
  private readonly lease: RelayLease;
  private readonly state: Omit<RelayStatus, 'leader' | 'leaseToken'> = {
    running: false,
    consecutiveFailures: 0,
    publishedTotal: 0,
  };
  private loop: Promise<void> | undefined;
  private wakePoll: (() => void) | undefined;
  private wakeAny: (() => void) | undefined;
  private notified = false;
  private previousRoundEndedMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: OutboxRelayOptions) {
    this.clock = options.clock ?? systemClock;
    this.batchSize = options.batchSize ?? 100;
    this.leaseMs = options.leaseMs ?? DEFAULT_RELAY_LEASE_MS;
    this.lease = new RelayLease({
      db: options.db,
      logger: options.logger,
      ttlMs: this.leaseMs,
      instance: options.instance ?? `${os.hostname()}:${process.pid}`,
      monotonicMs: options.monotonicMs,
      progressWindowMs: options.progressWindowMs,
    });
  }

  status(): RelayStatus {
    const token = this.lease.validToken();
    return { ...this.state, leader: token !== undefined, ...(token !== undefined ? { leaseToken: String(token) } : {}) };
  }

  /** One batch under the lease: taken or renewed first; nothing is read while another replica holds it. */
  async runOnce(): Promise<RelayRun> {
    const { db, logger } = this.options;
    const token = (await this.lease.ensure()) ? this.lease.validToken() : undefined;
    if (token === undefined) return { locked: false, published: 0 };
    const result = await db.$transaction(
      (tx) =>
        relayBatch(tx, {
          bus: this.options.bus,
          clock: this.clock,
          batchSize: this.batchSize,
          subjectPrefix: this.options.subjectPrefix,
          token,
          leaseMs: this.leaseMs,
          leaseValid: () => this.lease.validToken() === token,
        }),
      { timeout: this.options.transactionTimeoutMs ?? 60_000, maxWait: 10_000 },
    );
    this.state.lastRunAt = this.clock.now().toISOString();
    this.state.publishedTotal += result.published;
    // What it read went out (or there was nothing to send): the lease is doing its job.
    if (!result.failed && !result.leaseLost) this.lease.progressed();
    if (result.failed)
      logger.warn({ eventId: result.failed.eventId, err: result.failed.error }, 'outbox publish failed; the batch waits');
    if (result.leaseLost) {
      this.lease.lost();
      logger.warn({ fencingToken: String(token) }, 'outbox relay lease lapsed mid-batch; its rows wait for the next holder');
    }
    return result;
  }

  start(): void {
    if (this.state.running) return;
    this.state.running = true;
    this.lease.startHeartbeat();
    this.loop = this.poll();
  }

  async stop(): Promise<void> {
    if (!this.state.running) return;
    this.state.running = false;
    this.wakeAny?.();
    await this.loop;
    // Events committed just before shutdown go out now rather than at the next start.
    for (let i = 0; i < 10; i++) {
      if ((await this.tick()) !== 'more') break;
    }
    // Then another replica may lead at once instead of after the lease runs out.
    this.lease.stopHeartbeat();
    await this.lease
      .release()
      .catch((error: unknown) =>
        this.options.logger.warn({ err: oneLine(error) }, 'outbox relay lease release failed; it expires by itself'),
      );
  }

  notify(): void {
    if (this.wakePoll) this.wakePoll();
    else this.notified = true;
  }

  private async poll(): Promise<void> {
    while (this.state.running) {
      const outcome = await this.tick();
      if (!this.state.running) break;
      if (outcome === 'more') continue;
      if (outcome === 'failed') await this.wait(this.backoffMs(), false);
      else await this.waitForWork();
    }
  }

  /** Until the poll interval passes or a commit wakes it; then, if woken early, the rest of the gap. */
  private async waitForWork(): Promise<void> {
    await this.wait(this.options.pollIntervalMs ?? 1_000, true);
    const restMs = restOfRoundGapMs(this.previousRoundEndedMs, performance.now(), ROUND_GAP_MS);
    if (restMs > 0 && this.state.running) await this.wait(restMs, false);
  }

  private backoffMs(): number {
    return retryDelayMs(this.state.consecutiveFailures, {
      baseMs: this.options.retryBaseMs ?? 500,
      maxMs: this.options.retryMaxMs ?? 30_000,
    });
  }

  private async tick(): Promise<RelayTick> {
    try {
      const run = await this.runOnce().finally(() => {
        this.previousRoundEndedMs = performance.now();
      });
      if (run.failed) throw new Error(run.failed.error);
      this.state.consecutiveFailures = 0;
      this.state.lastError = undefined;
      return afterRelayRun(run, this.batchSize);
    } catch (error) {
      this.state.consecutiveFailures += 1;
      this.state.lastError = oneLine(error);
      this.options.logger.warn(
        { err: this.state.lastError, failures: this.state.consecutiveFailures },
        'outbox relay run failed',
      );
      return 'failed';
    }
  }

  /** Waits `ms`; cut short by stop(), and by notify() when `wakeOnNotify`. */
  private wait(ms: number, wakeOnNotify: boolean): Promise<void> {
    if (wakeOnNotify && this.notified) {
      this.notified = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakePoll = undefined;
        this.wakeAny = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref?.();
      this.wakeAny = done;
      if (wakeOnNotify) this.wakePoll = done;
    });
  }
}
