import { loadEventsSlice, type EventsSlice } from '../events/config.js';
import { loadGatewaySlice, type GatewaySlice } from '../gateway/config.js';
import { loadPlatformConfig, type PlatformConfig } from '../platform/config/config.js';
import type { Env } from '../platform/config/env.js';
import { requireRealServices } from '../platform/config/production.js';
import { loadAiSlice, type AiSlice } from '../subgraphs/ai/config.js';
import { loadCatalogSlice, type CatalogSlice } from '../subgraphs/catalog/config.js';

// The gateway process's loader has its own module: that process loads no subgraph code.
export { loadGatewayProcessConfig, type GatewayProcessConfig } from './gateway.config.js';

/**
 * What each process reads from the environment: the shared platform slice plus the slices of the
 * parts it runs, each parsed once at start (a bad value names its variable, platform/entrypoint.ts).
 */
export type CatalogProcessConfig = PlatformConfig & EventsSlice & CatalogSlice;
export type AiProcessConfig = PlatformConfig & EventsSlice & AiSlice;
export type WorkerProcessConfig = PlatformConfig & EventsSlice & CatalogSlice;
/** `npm start`: every part in one process. */
export type SystemConfig = PlatformConfig & GatewaySlice & EventsSlice & CatalogSlice & AiSlice;

export function loadCatalogProcessConfig(env: Env = process.env): CatalogProcessConfig {
  const platform = loadPlatformConfig(env);
  // The catalog replays dead letters from the broker.
  requireRealServices(platform, { bus: true });
  return { ...platform, ...loadEventsSlice(env, platform), ...loadCatalogSlice(env, platform) };
}

export function loadAiProcessConfig(env: Env = process.env): AiProcessConfig {
  const platform = loadPlatformConfig(env);
  requireRealServices(platform, { redis: true });
  return { ...platform, ...loadEventsSlice(env, platform), ...loadAiSlice(env) };
}

export function loadWorkerProcessConfig(env: Env = process.env): WorkerProcessConfig {
  const platform = loadPlatformConfig(env);
  requireRealServices(platform, { bus: true });
  return { ...platform, ...loadEventsSlice(env, platform), ...loadCatalogSlice(env, platform) };
}

export function loadSystemConfig(env: Env = process.env): SystemConfig {
  const platform = loadPlatformConfig(env);
  requireRealServices(platform, { bus: true, redis: true });
  return {
    ...platform,
    ...loadGatewaySlice(env, platform),
    ...loadEventsSlice(env, platform),
    ...loadCatalogSlice(env, platform),
    ...loadAiSlice(env),
  };
}
