// `npm run start:gateway`: the gateway (with the REST-compat layer) as its own process, calling the
// subgraphs at CATALOG_URL and AI_URL.
import 'reflect-metadata';
import { openPlatform } from '../platform/bootstrap.js';
import { configOrExit, exitOnSignals } from '../platform/entrypoint.js';
import { startGateway, type ReadinessReport } from './server.js';

const config = configOrExit();
const platform = await openPlatform(config, 'gateway');
const subgraphUrls = { catalog: config.catalogUrl, ai: config.aiUrl };

async function readiness(): Promise<ReadinessReport> {
  const checks: ReadinessReport['checks'] = {};
  for (const [name, url] of Object.entries(subgraphUrls)) {
    const health = new URL('/healthz', url);
    const ok = await fetch(health, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false);
    // A subgraph being down degrades the graph (its fields error) but does not stop the gateway.
    checks[`subgraph:${name}`] = { status: ok ? 'up' : 'down', required: false };
  }
  return { ready: true, checks };
}

const gateway = await startGateway({
  host: config.host,
  port: config.port,
  subgraphUrls,
  verifier: platform.verifier,
  logger: platform.logger,
  maxBodyBytes: config.maxBodyBytes,
  readiness,
});
exitOnSignals(platform.logger, async () => {
  await gateway.close();
  await platform.database.close();
});
