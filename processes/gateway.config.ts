import { loadGatewaySlice, type GatewaySlice } from '../gateway/config.js';
import { loadPlatformConfig, type PlatformConfig } from '../platform/config/config.js';
import type { Env } from '../platform/config/env.js';

/** The gateway process (with REST-compat): the shared platform slice and the gateway's. */
export type GatewayProcessConfig = PlatformConfig & GatewaySlice;

export function loadGatewayProcessConfig(env: Env = process.env): GatewayProcessConfig {
  const platform = loadPlatformConfig(env);
  return { ...platform, ...loadGatewaySlice(env, platform) };
}
