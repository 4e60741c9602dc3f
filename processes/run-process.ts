import { configOrExit, startOrExit, stopOnSignals } from '../platform/lifecycle/entrypoint.js';
import type { PlatformConfig } from '../platform/config/config.js';
import type { ProductionChecked } from '../platform/config/production.js';
import type { Env } from '../platform/config/env.js';
import { createLogger } from '../platform/observability/logger.js';
import { buildParts, PartStack } from '../platform/lifecycle/parts.js';
import { telemetryPart } from './parts.js';

/**
 * Every process entry, one shape: the configuration parsed once (a bad value, or a development
 * fallback production refuses, exits 2 naming its variable; an opt-in's warning is logged),
 * telemetry, then the parts `build` starts on the stack (an unreachable dependency exits 1 with
 * one line), then SIGTERM/SIGINT drain and stop them in reverse (platform/lifecycle/entrypoint.ts).
 */
export async function runProcess<C extends PlatformConfig & ProductionChecked>(
  name: string,
  load: (env: Env) => C,
  build: (stack: PartStack, config: C) => Promise<void>,
): Promise<{ config: C; stack: PartStack }> {
  const config = configOrExit(load);
  const stack = new PartStack();
  stack.useLogger(createLogger({ level: config.logLevel, name }));
  // An opt-in into a development fallback in production is said at every start, not only once.
  for (const warning of config.startWarnings) stack.logger.warn(warning);
  await startOrExit(() =>
    buildParts(stack, async (parts) => {
      await telemetryPart(parts, config, name);
      await build(parts, config);
    }),
  );
  stopOnSignals(stack, { logger: stack.logger, drainMs: config.ops.shutdownDrainMs, boundMs: config.ops.shutdownTimeoutMs });
  return { config, stack };
}
