import type { Logger } from '../../platform/observability/logger.js';
import type { BusMessage } from '../bus/event-bus.js';
import type { Clock } from '../../platform/clock.js';
import { retryDelayMs } from '../retry.logic.js';

interface Entry<T> {
  item: T;
  since: number;
  blocker: number;
}

export interface HeldMessagesOptions<T extends { m: BusMessage }> {
  /** How often a held message's ack wait is restarted (half the ack wait). */
  keepAliveMs: number;
  /** Past this a held message is released anyway (order-hold.logic.ts, holdLimitMs). */
  holdLimitMs: number;
  clock: Clock;
  logger: Logger;
  /** Which of the held items (in sequence order) must still wait: seq -> the sequence each waits for. */
  recheck(items: T[]): Promise<Map<number, number>>;
  /** Hands released items back, in sequence order, to be applied. */
  release(items: T[]): void;
}

/**
 * Messages kept in hand while an earlier message of their key is unsettled elsewhere. They give
 * their handler slot back (so the bus keeps delivering, the earlier message included), their ack
 * wait is restarted while they wait (no delivery is spent, nothing is dead-lettered for waiting),
 * and they are checked again after each local commit and on a backing-off timer.
 */
export class HeldMessages<T extends { m: BusMessage }> {
  private readonly entries = new Map<number, Entry<T>>();
  private timer: NodeJS.Timeout | undefined;
  private readonly keepAlive: NodeJS.Timeout;
  private checking = false;
  private again = false;
  private idleRounds = 0;
  private stopped = false;
  /** Released by the hold limit rather than by their predecessor. */
  expired = 0;

  constructor(private readonly options: HeldMessagesOptions<T>) {
    this.keepAlive = setInterval(() => {
      for (const { item } of this.entries.values()) item.m.working();
    }, options.keepAliveMs);
    this.keepAlive.unref?.();
  }

  get size(): number {
    return this.entries.size;
  }

  has(seq: number): boolean {
    return this.entries.has(seq);
  }

  hold(item: T, blocker: number): void {
    if (this.stopped) {
      item.m.nak();
      return;
    }
    // A redelivery of a message already held (its first delivery's ack wait ran out) replaces it.
    const existing = this.entries.get(item.m.seq);
    this.entries.set(item.m.seq, { item, blocker, since: existing?.since ?? this.options.clock.now().getTime() });
    this.schedule();
  }

  /** Something settled here: what waited for it may go now. */
  poke(): void {
    if (!this.entries.size || this.stopped) return;
    this.idleRounds = 0;
    if (this.checking) {
      this.again = true;
      return;
    }
    // Sooner than a backed-off timer would.
    clearTimeout(this.timer);
    this.timer = undefined;
    this.schedule(0);
  }

  /** Gives every held message back at once (another replica, or this one restarted, takes them). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.keepAlive);
    for (const { item } of this.entries.values()) item.m.nak();
    this.entries.clear();
  }

  // Another replica's commit is seen only by looking again: often, but backing off while nothing moves.
  private schedule(delayMs = retryDelayMs(this.idleRounds + 1, { baseMs: 50, maxMs: 500 })): void {
    if (this.timer || this.checking || this.stopped || !this.entries.size) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.check();
    }, delayMs);
    this.timer.unref?.();
  }

  private async check(): Promise<void> {
    this.checking = true;
    try {
      const entries = [...this.entries.values()].sort((a, b) => a.item.m.seq - b.item.m.seq);
      let waiting: Map<number, number>;
      try {
        waiting = await this.options.recheck(entries.map((e) => e.item));
      } catch (error) {
        // The broker or the database cannot say: keep waiting.
        this.options.logger.warn({ err: (error as Error).message }, 'order check failed; held messages keep waiting');
        waiting = new Map(entries.map((e) => [e.item.m.seq, e.blocker]));
      }
      const now = this.options.clock.now().getTime();
      const released: T[] = [];
      for (const entry of entries) {
        const seq = entry.item.m.seq;
        if (this.stopped || this.entries.get(seq) !== entry) continue;
        const blocker = waiting.get(seq);
        if (blocker !== undefined && now - entry.since < this.options.holdLimitMs) {
          entry.blocker = blocker;
          continue;
        }
        if (blocker !== undefined) {
          this.expired += 1;
          this.options.logger.warn(
            { seq, waitedFor: blocker, heldMs: now - entry.since },
            'an earlier message of the same key stayed unsettled past the hold limit; applying this one anyway',
          );
        }
        this.entries.delete(seq);
        released.push(entry.item);
      }
      this.idleRounds = released.length ? 0 : this.idleRounds + 1;
      if (released.length) this.options.release(released);
    } finally {
      this.checking = false;
    }
    if (this.again) {
      this.again = false;
      this.schedule(0);
    } else this.schedule();
  }
}
