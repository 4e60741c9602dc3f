import { randomBytes } from 'node:crypto';
import { Prisma, type Db } from '../../platform/db/database.js';
import type { Logger } from '../../platform/observability/logger.js';
import { heartbeatIntervalMs, heldLease, leaseValid, progressStalled, renewalDue, type HeldLease } from './relay-lease.logic.js';

/** The lease row of the outbox relay. */
export const RELAY_LEASE_NAME = 'outbox-relay';

/** The database's clock, in UTC (the lease columns are timestamps without time zone). */
const DB_NOW = Prisma.sql`(clock_timestamp() AT TIME ZONE 'UTC')`;

export interface RelayLeaseOptions {
  db: Db;
  logger: Logger;
  /** How long a holder keeps the lease without renewing it: the bound on a frozen holder. */
  ttlMs: number;
  /** Who holds it, for people reading the row (SERVICE_INSTANCE); a random suffix makes it this relay's own. */
  instance: string;
  /** A monotonic clock in ms (default performance.now()): it keeps counting through a pause. */
  monotonicMs?: () => number;
  /**
   * How long the holder keeps the lease without publishing progress (default ttlMs): a leader
   * whose broker link is dead but whose database is fine lets the lease go after this long.
   */
  progressWindowMs?: number;
}

/**
 * The outbox relay's leadership across replicas: a row in Postgres that one relay holds until its
 * expiry, renewed by a heartbeat every third of the period. Taking it (when it has expired, or is
 * this relay's own) adds one to its fencing token; renewing it keeps the token and works only while
 * it has not expired. A paused holder therefore loses it within ttlMs, another replica takes it with
 * a higher token, and the paused one, when it resumes, finds its local deadline passed (see
 * relay-lease.logic.ts) and must take the lease again before it publishes.
 *
 * Renewing proves only that the holder reaches the database. The relay also reports progress
 * (progressed(): a batch that published what it read, or found nothing to publish); a holder
 * without progress for progressWindowMs (its publishes time out: a half-open NATS link) gives the
 * lease up and stands aside for one period, so a replica that can publish takes over.
 */
export class RelayLease {
  readonly holder: string;
  private held: HeldLease | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  private readonly progressWindowMs: number;
  /** Monotonic ms of the last publishing progress under the lease held. */
  private lastProgress = 0;
  /** Monotonic ms before which this relay does not take the lease (it gave it up for want of progress). */
  private standAsideUntil = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: RelayLeaseOptions) {
    this.holder = `${options.instance}/${randomBytes(4).toString('hex')}`;
    this.now = options.monotonicMs ?? (() => performance.now());
    this.progressWindowMs = options.progressWindowMs ?? options.ttlMs;
  }

  /** The relay published what it read (or found nothing to publish) under the lease. */
  progressed(): void {
    this.lastProgress = this.now();
  }

  /** The token, while this relay may count on the lease; undefined otherwise. */
  validToken(): bigint | undefined {
    return leaseValid(this.held, this.now()) ? this.held.token : undefined;
  }

  /** Holds the lease for at least a renewal period more, taking it if free; false when another holds it. */
  async ensure(): Promise<boolean> {
    const now = this.now();
    if (await this.giveUpWithoutProgress(now)) return false;
    if (now < this.standAsideUntil) return false;
    if (leaseValid(this.held, now) && !renewalDue(this.held, now, this.options.ttlMs)) return true;
    if (leaseValid(this.held, now) && (await this.renew())) return true;
    return this.acquire();
  }

  /** Renews every third of the period while held, so a batch longer than the lease keeps it. */
  startHeartbeat(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (!leaseValid(this.held, this.now())) return;
      this.giveUpWithoutProgress(this.now())
        .then((gaveUp) => (gaveUp ? false : this.renew()))
        .catch((error: unknown) =>
          this.options.logger.warn({ err: (error as Error).message }, 'outbox relay lease renewal failed'),
        );
    }, heartbeatIntervalMs(this.options.ttlMs));
    this.timer.unref?.();
  }

  stopHeartbeat(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Gives the lease up at once (a clean stop), so another replica need not wait for it to expire. */
  async release(): Promise<void> {
    const held = this.held;
    this.held = undefined;
    if (!held) return;
    await this.options.db.$executeRaw`
      UPDATE "OutboxRelayLease" SET "expiresAt" = ${DB_NOW}
      WHERE name = ${RELAY_LEASE_NAME} AND holder = ${this.holder} AND token = ${held.token}`;
  }

  /**
   * Releases the lease held when the relay has made no publishing progress under it for the
   * window, and stands aside for one period; true when it did.
   */
  private async giveUpWithoutProgress(now: number): Promise<boolean> {
    const held = this.held;
    if (!leaseValid(held, now) || !progressStalled(this.lastProgress, now, this.progressWindowMs)) return false;
    this.standAsideUntil = now + this.options.ttlMs;
    this.options.logger.warn(
      { holder: this.holder, fencingToken: String(held.token), stalledMs: Math.round(now - this.lastProgress) },
      'outbox relay lease given up: no publishing progress; another replica may lead',
    );
    await this.release();
    return true;
  }

  /** Forgets the lease (it was found fenced): the next ensure() takes it again, with a new token. */
  lost(): void {
    this.held = undefined;
  }

  private async acquire(): Promise<boolean> {
    const sentAt = this.now();
    const rows = await this.options.db.$queryRaw<Array<{ token: bigint }>>`
      INSERT INTO "OutboxRelayLease" (name, holder, token, "acquiredAt", "renewedAt", "expiresAt")
      VALUES (${RELAY_LEASE_NAME}, ${this.holder}, 1, ${DB_NOW}, ${DB_NOW}, ${DB_NOW} + ${this.options.ttlMs} * interval '1 millisecond')
      ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, token = "OutboxRelayLease".token + 1,
        "acquiredAt" = EXCLUDED."acquiredAt", "renewedAt" = EXCLUDED."renewedAt", "expiresAt" = EXCLUDED."expiresAt"
      WHERE "OutboxRelayLease"."expiresAt" <= ${DB_NOW} OR "OutboxRelayLease".holder = ${this.holder}
      RETURNING token`;
    const previous = this.held;
    this.held = rows.length ? heldLease(rows[0].token, sentAt, this.options.ttlMs) : undefined;
    if (this.held && this.held.token !== previous?.token) {
      // A new token gets a whole window to show progress.
      this.lastProgress = sentAt;
      this.options.logger.info({ holder: this.holder, fencingToken: String(this.held.token) }, 'outbox relay lease taken');
    }
    return this.held !== undefined;
  }

  private async renew(): Promise<boolean> {
    const held = this.held;
    if (!held) return false;
    const sentAt = this.now();
    const renewed = await this.options.db.$executeRaw`
      UPDATE "OutboxRelayLease"
      SET "renewedAt" = ${DB_NOW}, "expiresAt" = ${DB_NOW} + ${this.options.ttlMs} * interval '1 millisecond'
      WHERE name = ${RELAY_LEASE_NAME} AND holder = ${this.holder} AND token = ${held.token} AND "expiresAt" > ${DB_NOW}`;
    // Another renewal or a loss may have happened meanwhile: only the lease renewed is updated.
    if (this.held?.token !== held.token) return renewed > 0;
    this.held = renewed > 0 ? heldLease(held.token, sentAt, this.options.ttlMs) : undefined;
    if (!renewed) this.options.logger.warn({ holder: this.holder, fencingToken: String(held.token) }, 'outbox relay lease lost');
    return renewed > 0;
  }
}

/**
 * The condition that fences the relay's writes: true only while `token` is the lease's current
 * token and it has not expired, by the database's clock, at the moment the statement runs.
 */
export function leaseStillHeld(token: bigint): Prisma.Sql {
  return Prisma.sql`EXISTS (SELECT 1 FROM "OutboxRelayLease"
    WHERE name = ${RELAY_LEASE_NAME} AND token = ${token} AND "expiresAt" > ${DB_NOW})`;
}
