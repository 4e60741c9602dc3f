import type { Logger } from '../../platform/observability/logger.js';
import {
  afterFailure,
  afterFetchSuccess,
  afterProbeSuccess,
  attemptOrder,
  HEALTHY,
  type ReplicaHealth,
} from './replica-health.logic.js';

/** One replica of a subgraph, as listed in CATALOG_URL / AI_URL. */
export interface Replica {
  /** 1-based position in the configured list: how logs and readiness name it. */
  readonly number: number;
  readonly url: string;
}

export interface ReplicaPoolOptions {
  subgraph: string;
  urls: readonly string[];
  firstBackoffMs: number;
  /** Asks a replica whether it is ready to serve (its /readyz): a resting one, and every one in rotation. */
  probe(replica: Replica): Promise<boolean>;
  /**
   * How often replicas in rotation are asked (0: never). With several replicas, a replica that
   * drains for a shutdown (its /readyz says 503 at once) leaves rotation within this, before its
   * listener closes, so nothing is sent to it in the race with its close.
   */
  watchIntervalMs?: number;
  logger: Logger;
  /** Replicas in rotation changed (the subgraph_replicas_up gauge). */
  onRotationChange?(up: number): void;
  now?: () => number;
}

/**
 * The replicas of one subgraph and the gateway's view of each (replica-health.logic.ts): which to
 * try for a fetch, in what order, and the probes that bring a failed one back. With one URL (a
 * balancer, or a single replica) it still takes the replica out after a failure, but the only
 * replica is always tried as the last resort, so that changes nothing for the client.
 */
export class ReplicaPool {
  readonly replicas: readonly Replica[];
  private health: ReplicaHealth[];
  private turn = 0;
  private readonly probes = new Map<number, NodeJS.Timeout>();
  private closed = false;
  private readonly now: () => number;

  constructor(private readonly options: ReplicaPoolOptions) {
    if (options.urls.length === 0) throw new Error(`No URL configured for subgraph ${options.subgraph}`);
    this.replicas = options.urls.map((url, index) => ({ number: index + 1, url }));
    this.health = this.replicas.map(() => HEALTHY);
    this.now = options.now ?? Date.now;
    // One URL is always tried as the last resort: watching it would change nothing.
    if (this.replicas.length > 1 && options.watchIntervalMs) this.watch(options.watchIntervalMs);
  }

  /** The replicas to try for one fetch, in order (each at most once). */
  attemptOrder(): Replica[] {
    const order = attemptOrder(this.health, this.turn);
    this.turn = (this.turn + 1) % Number.MAX_SAFE_INTEGER;
    return order.map((index) => this.replicas[index]);
  }

  succeeded(replica: Replica): void {
    const before = this.health[replica.number - 1];
    if (before.failures === 0) return;
    this.set(replica, afterFetchSuccess());
    this.options.logger.info(
      { subgraph: this.options.subgraph, replica: replica.number, url: replica.url },
      'subgraph replica serves again',
    );
  }

  /** A fetch failed: out of rotation for a back-off, then probed. `detail` is logged, never answered. */
  failed(replica: Replica, detail: { reason: string; excerpt?: string }): void {
    const before = this.health[replica.number - 1];
    this.set(replica, afterFailure(before, this.now(), this.options.firstBackoffMs));
    // Logged when the replica leaves rotation, not on every fetch that fails while it is out: an
    // outage under load would otherwise write a line per request.
    if (before.up) {
      this.options.logger.warn(
        { subgraph: this.options.subgraph, replica: replica.number, url: replica.url, ...detail },
        'subgraph replica failed; out of rotation until its health probe answers',
      );
    }
    this.scheduleProbe(replica);
  }

  /** Replicas in rotation now, and how many there are. */
  inRotation(): { up: number; of: number } {
    return { up: this.health.filter((health) => health.up).length, of: this.replicas.length };
  }

  close(): void {
    this.closed = true;
    if (this.watching) clearInterval(this.watching);
    for (const timer of this.probes.values()) clearTimeout(timer);
    this.probes.clear();
  }

  private watching?: NodeJS.Timeout;

  /** Asks every replica in rotation at each interval; one that is not ready leaves rotation. */
  private watch(intervalMs: number): void {
    let asking = false;
    this.watching = setInterval(() => {
      if (asking || this.closed) return;
      asking = true;
      const inRotation = this.replicas.filter((replica) => this.health[replica.number - 1].up);
      void Promise.all(
        inRotation.map(async (replica) => {
          const ready = await this.options.probe(replica).catch(() => false);
          if (!ready && !this.closed && this.health[replica.number - 1].up)
            this.failed(replica, { reason: 'not ready (/readyz)' });
        }),
      ).finally(() => (asking = false));
    }, intervalMs);
    this.watching.unref();
  }

  private set(replica: Replica, health: ReplicaHealth): void {
    const upBefore = this.inRotation().up;
    this.health[replica.number - 1] = health;
    const upAfter = this.inRotation().up;
    if (upAfter !== upBefore) this.options.onRotationChange?.(upAfter);
  }

  private scheduleProbe(replica: Replica): void {
    if (this.closed || this.probes.has(replica.number)) return;
    const delay = Math.max(0, this.health[replica.number - 1].probeAt - this.now());
    const timer = setTimeout(() => void this.runProbe(replica), delay);
    // A pending probe never keeps the process alive.
    timer.unref();
    this.probes.set(replica.number, timer);
  }

  private async runProbe(replica: Replica): Promise<void> {
    const answered = await this.options.probe(replica).catch(() => false);
    this.probes.delete(replica.number);
    if (this.closed) return;
    const health = this.health[replica.number - 1];
    // A fetch that succeeded meanwhile (the last-resort attempt) already put it back.
    if (health.up) return;
    if (answered) {
      this.set(replica, afterProbeSuccess(health));
      this.options.logger.info(
        { subgraph: this.options.subgraph, replica: replica.number, url: replica.url },
        'subgraph replica answers its health probe; back in rotation',
      );
      return;
    }
    this.set(replica, afterFailure(health, this.now(), this.options.firstBackoffMs));
    this.scheduleProbe(replica);
  }
}
