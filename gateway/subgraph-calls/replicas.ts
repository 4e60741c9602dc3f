import type { Dispatcher } from 'undici';
import type { Logger } from '../../platform/observability/logger.js';
import type { Metrics } from '../../platform/observability/metrics.js';
import { subgraphFetchMetrics } from './metrics.js';
import { ReplicaPool } from './replica-pool.js';
import { probeReadiness } from './subgraph-fetch.js';

/** One URL (a single replica, or a balancer in front of several), or the list of replicas. */
export type SubgraphUrls = string | readonly string[];

export function replicaUrls(urls: SubgraphUrls): readonly string[] {
  return typeof urls === 'string' ? [urls] : urls;
}

/**
 * A replica pool per subgraph, probing failed replicas through the gateway's own connections and
 * keeping the subgraph_replicas_up gauge.
 */
export function replicaPools<Name extends string>(
  urls: Record<Name, SubgraphUrls>,
  deps: { dispatcher: Dispatcher; firstBackoffMs: number; watchIntervalMs: number; logger: Logger; metrics?: Metrics },
): Record<Name, ReplicaPool> {
  const gauge = deps.metrics && subgraphFetchMetrics(deps.metrics).replicasUp;
  const pools = {} as Record<Name, ReplicaPool>;
  for (const [name, list] of Object.entries(urls) as Array<[Name, SubgraphUrls]>) {
    const pool = new ReplicaPool({
      subgraph: name,
      urls: replicaUrls(list),
      firstBackoffMs: deps.firstBackoffMs,
      probe: (replica) => probeReadiness(deps.dispatcher, replica.url),
      watchIntervalMs: deps.watchIntervalMs,
      logger: deps.logger,
      onRotationChange: (up) => gauge?.set({ subgraph: name }, up),
    });
    gauge?.set({ subgraph: name }, pool.inRotation().up);
    pools[name] = pool;
  }
  return pools;
}

/**
 * A `fetch` for plain HTTP endpoints of a subgraph (REST-compat relays the AI subgraph's health):
 * the path of the URL it is given, on the replicas in the pool's order. A GET moves to the next
 * replica when one cannot be reached or answers 5xx; anything else is sent once.
 */
export function replicaFetch(pool: ReplicaPool): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : input.toString());
    const method = (init?.method ?? 'GET').toUpperCase();
    const order = pool.attemptOrder();
    const retryable = method === 'GET' || method === 'HEAD';
    // A 5xx answer is returned when no replica did better: the caller relays what the subgraph said.
    let answered: Response | undefined;
    let unreachable: unknown;
    for (const replica of retryable ? order : order.slice(0, 1)) {
      const target = new URL(`${url.pathname}${url.search}`, replica.url);
      try {
        const response = await fetch(target, init);
        await answered?.body?.cancel();
        if (response.status < 500) {
          pool.succeeded(replica);
          return response;
        }
        pool.failed(replica, { reason: `answered HTTP ${response.status} at ${url.pathname}` });
        answered = response;
      } catch (error) {
        pool.failed(replica, { reason: `${url.pathname} unreachable: ${(error as Error).message}` });
        unreachable = error;
      }
    }
    if (answered) return answered;
    throw unreachable;
  };
}
