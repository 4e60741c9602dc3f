import { gatewayProductionFacts, loadGatewaySlice, type GatewaySlice } from '../gateway/config.js';
import { loadPlatformConfig, type PlatformConfig } from '../platform/config/config.js';
import type { Env } from '../platform/config/env.js';
import { refuseDevelopmentFallbacks, type ProductionChecked } from '../platform/config/production.js';

/** The gateway process (with REST-compat): the shared platform slice and the gateway's. */
export type GatewayProcessConfig = PlatformConfig & GatewaySlice & ProductionChecked;

export function loadGatewayProcessConfig(env: Env = process.env): GatewayProcessConfig {
  const platform = loadPlatformConfig(env);
  const gateway = loadGatewaySlice(env, platform);
  // Idempotency-Key records live in the database table without Redis, shared by every replica.
  const startWarnings = refuseDevelopmentFallbacks('gateway', { ...platform, ...gatewayProductionFacts(gateway) });
  return { ...platform, ...gateway, startWarnings };
}
