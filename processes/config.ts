import { loadEventsSlice, type EventsSlice } from '../events/config.js';
import { gatewayProductionFacts, loadGatewaySlice, type GatewaySlice } from '../gateway/config.js';
import { loadPlatformConfig, type PlatformConfig } from '../platform/config/config.js';
import type { Env } from '../platform/config/env.js';
import { refuseDevelopmentFallbacks, type ProductionChecked } from '../platform/config/production.js';
import { aiProductionFacts, loadAiSlice, type AiSlice } from '../subgraphs/ai/config.js';
import { loadCatalogSlice, type CatalogSlice } from '../subgraphs/catalog/config.js';

// The gateway process's loader has its own module: that process loads no subgraph code.
export { loadGatewayProcessConfig, type GatewayProcessConfig } from './gateway.config.js';

/**
 * What each process reads from the environment: the shared platform slice plus the slices of the
 * parts it runs, each parsed once at start (a bad value names its variable, platform/lifecycle/entrypoint.ts),
 * then checked against the development fallbacks production refuses (platform/config/production.logic.ts).
 */
export type CatalogProcessConfig = PlatformConfig & EventsSlice & CatalogSlice & ProductionChecked;
export type AiProcessConfig = PlatformConfig & EventsSlice & AiSlice & ProductionChecked;
export type WorkerProcessConfig = PlatformConfig & EventsSlice & CatalogSlice & ProductionChecked;
/** `npm start`: every part in one process. */
export type SystemConfig = PlatformConfig & GatewaySlice & EventsSlice & CatalogSlice & AiSlice & ProductionChecked;

export function loadCatalogProcessConfig(env: Env = process.env): CatalogProcessConfig {
  const platform = loadPlatformConfig(env);
  const startWarnings = refuseDevelopmentFallbacks('catalog', platform);
  return { ...platform, ...loadEventsSlice(env, platform), ...loadCatalogSlice(env, platform), startWarnings };
}

export function loadAiProcessConfig(env: Env = process.env): AiProcessConfig {
  const platform = loadPlatformConfig(env);
  const ai = loadAiSlice(env);
  const startWarnings = refuseDevelopmentFallbacks('ai', { ...platform, ...aiProductionFacts(ai) });
  return { ...platform, ...loadEventsSlice(env, platform), ...ai, startWarnings };
}

export function loadWorkerProcessConfig(env: Env = process.env): WorkerProcessConfig {
  const platform = loadPlatformConfig(env);
  const startWarnings = refuseDevelopmentFallbacks('worker', platform);
  return { ...platform, ...loadEventsSlice(env, platform), ...loadCatalogSlice(env, platform), startWarnings };
}

export function loadSystemConfig(env: Env = process.env): SystemConfig {
  const platform = loadPlatformConfig(env);
  const gateway = loadGatewaySlice(env, platform);
  const ai = loadAiSlice(env);
  const startWarnings = refuseDevelopmentFallbacks('all', {
    ...platform,
    ...gatewayProductionFacts(gateway),
    ...aiProductionFacts(ai),
  });
  return {
    ...platform,
    ...gateway,
    ...loadEventsSlice(env, platform),
    ...loadCatalogSlice(env, platform),
    ...ai,
    startWarnings,
  };
}
