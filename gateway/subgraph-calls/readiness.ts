import type { ReadinessReport } from '../../platform/http/probe-endpoints.js';
import { replicaUrls, type SubgraphUrls } from './replicas.js';

type Check = ReadinessReport['checks'][string];

/**
 * Readiness checks of the subgraphs behind the gateway, one per subgraph over all its replicas:
 * `up` when every replica's health endpoint answers, `degraded` when some do (the gateway serves
 * from those), `down` when none does. Not required: with one subgraph down the gateway still
 * answers what the other serves (subgraph.unavailable for the rest). Replicas are named by their
 * position in CATALOG_URL / AI_URL, not by address: /readyz is answered without authentication.
 */
export async function subgraphChecks(urls: Record<string, SubgraphUrls>): Promise<ReadinessReport['checks']> {
  const checks: ReadinessReport['checks'] = {};
  await Promise.all(
    Object.entries(urls).map(async ([name, list]) => {
      checks[`subgraph:${name}`] = subgraphCheck(await Promise.all(replicaUrls(list).map(replicaHealth)));
    }),
  );
  return checks;
}

/** One replica's health endpoint: undefined when it answers 2xx, else why not. */
async function replicaHealth(url: string): Promise<string | undefined> {
  const started = Date.now();
  try {
    const response = await fetch(new URL('/healthz', url), { signal: AbortSignal.timeout(2_000) });
    await response.body?.cancel();
    return response.ok ? undefined : `health check answered ${response.status}`;
  } catch (error) {
    return (error as Error).name === 'TimeoutError' ? `no answer within ${Date.now() - started} ms` : 'unreachable';
  }
}

function subgraphCheck(failures: ReadonlyArray<string | undefined>): Check {
  const down = failures.flatMap((failure, index) => (failure === undefined ? [] : [{ number: index + 1, failure }]));
  if (down.length === 0) return { status: 'up', required: false };
  if (failures.length === 1) {
    return { status: 'down', required: false, detail: `${down[0].failure}; its fields answer subgraph.unavailable` };
  }
  const which = down.map(({ number, failure }) => `replica ${number}: ${failure}`).join('; ');
  if (down.length === failures.length) {
    return { status: 'down', required: false, detail: `no replica answers (${which}); its fields answer subgraph.unavailable` };
  }
  const serving = failures.length - down.length;
  return { status: 'degraded', required: false, detail: `${serving} of ${failures.length} replicas answer (${which})` };
}
