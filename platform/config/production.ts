import { loadPlatformConfig, type PlatformConfig } from './config.js';
import { ConfigError, type Env } from './env.js';
import { productionCheck, refusalLine, type ImageCommand, type ProductionFacts, type Refusal } from './production.logic.js';

/**
 * NODE_ENV=production refuses a development fallback (issue #23: a production gateway without
 * AUTH_* wrote a development key and trusted tokens signed by it; issue #32: `migrate` migrated a
 * throw-away embedded database and exited 0). A ConfigError, so every entry prints it the way it
 * prints any bad value: one line, exit 2 (platform/lifecycle/entrypoint.ts configOrExit).
 */
export class ProductionFallbackError extends ConfigError {
  readonly code = 'config.production_fallback';

  constructor(readonly refusals: readonly Refusal[]) {
    const line = refusalLine(refusals);
    super(line.variable, line.problem);
    this.name = 'ProductionFallbackError';
  }
}

/**
 * Throws when `command` would take a development fallback in production (production.logic.ts has
 * the table); returns the warnings of the opt-ins in use, for the process to log once it has a logger.
 */
export function refuseDevelopmentFallbacks(command: ImageCommand, facts: ProductionFacts): string[] {
  const { refusals, warnings } = productionCheck(command, facts);
  if (refusals.length > 0) throw new ProductionFallbackError(refusals);
  return warnings;
}

/** A process's configuration once checked: the opt-ins' warnings, which its entry logs at start. */
export interface ProductionChecked {
  startWarnings: readonly string[];
}

/**
 * The loader of a command that runs no part (migrate, schema-ready, the replay CLI): the platform
 * slice, checked before the command touches a database or the filesystem, so a read-only root
 * gets the same one line as any other refusal.
 */
export function checkedPlatformConfig(command: ImageCommand): (env: Env) => PlatformConfig & ProductionChecked {
  return (env) => {
    const platform = loadPlatformConfig(env);
    return { ...platform, startWarnings: refuseDevelopmentFallbacks(command, platform) };
  };
}
