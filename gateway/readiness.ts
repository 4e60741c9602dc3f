import type { ReadinessReport } from '../platform/http/probe-endpoints.js';

/**
 * Readiness checks of the subgraphs behind the gateway. Not required: with one subgraph down the
 * gateway still answers what the other serves (subgraph.unavailable for the rest).
 */
export async function subgraphChecks(urls: Record<string, string>): Promise<ReadinessReport['checks']> {
  const checks: ReadinessReport['checks'] = {};
  await Promise.all(
    Object.entries(urls).map(async ([name, url]) => {
      const started = Date.now();
      try {
        const response = await fetch(new URL('/healthz', url), { signal: AbortSignal.timeout(2_000) });
        checks[`subgraph:${name}`] = response.ok
          ? { status: 'up', required: false }
          : { status: 'down', required: false, detail: `health check answered ${response.status}` };
      } catch (error) {
        const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${Date.now() - started} ms` : 'unreachable';
        checks[`subgraph:${name}`] = {
          status: 'down',
          required: false,
          detail: `${reason}; its fields answer subgraph.unavailable`,
        };
      }
    }),
  );
  return checks;
}
