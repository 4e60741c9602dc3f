/**
 * The gateway's view of one replica of a subgraph (client-side balancing, gateway/subgraph-calls/replica-pool.ts).
 *
 * A replica that fails a fetch (unreachable, 5xx, not GraphQL, no answer in time) is taken out
 * of rotation at once, for a back-off that doubles with each consecutive failure (capped). When
 * the back-off ends its health endpoint is probed: a probe that answers puts it back in rotation,
 * one that does not extends the back-off. `failures` is reset only by a fetch that succeeds, so a
 * replica whose health endpoint answers while its GraphQL fetches keep failing is taken out for
 * longer each time instead of flapping every back-off.
 */
export interface ReplicaHealth {
  /** In rotation: fetches go to it in turn. */
  up: boolean;
  /** Consecutive failures since the last fetch that succeeded. */
  failures: number;
  /** While out of rotation: when to probe it next (ms since the epoch). */
  probeAt: number;
}

export const HEALTHY: ReplicaHealth = { up: true, failures: 0, probeAt: 0 };

/** Back-off growth stops at this many times the first one (1 s → 30 s by default). */
export const MAX_BACKOFF_FACTOR = 30;

export function backoffMs(failures: number, firstMs: number): number {
  const factor = Math.min(MAX_BACKOFF_FACTOR, 2 ** Math.max(0, Math.min(failures - 1, 16)));
  return firstMs * factor;
}

/** A fetch (or a probe) failed. */
export function afterFailure(health: ReplicaHealth, nowMs: number, firstBackoffMs: number): ReplicaHealth {
  const failures = health.failures + 1;
  return { up: false, failures, probeAt: nowMs + backoffMs(failures, firstBackoffMs) };
}

/** The health endpoint answered: back in rotation, on probation until a fetch succeeds. */
export function afterProbeSuccess(health: ReplicaHealth): ReplicaHealth {
  return { up: true, failures: health.failures, probeAt: 0 };
}

export function afterFetchSuccess(): ReplicaHealth {
  return HEALTHY;
}

/**
 * The replicas to try for one fetch, in order: those in rotation, starting at `turn` (round
 * robin), then those out of rotation, the soonest due for a probe first. The last ones are a last
 * resort (every replica in rotation failed, or none is in rotation): trying one costs at most one
 * more attempt, and if it has come back the fetch succeeds instead of failing.
 */
export function attemptOrder(replicas: readonly ReplicaHealth[], turn: number): number[] {
  const indices = replicas.map((_, index) => index);
  const inRotation = indices.filter((index) => replicas[index].up);
  const start = inRotation.length ? turn % inRotation.length : 0;
  const rotated = [...inRotation.slice(start), ...inRotation.slice(0, start)];
  const resting = indices.filter((index) => !replicas[index].up).sort((a, b) => replicas[a].probeAt - replicas[b].probeAt);
  return [...rotated, ...resting];
}
