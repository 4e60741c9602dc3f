import { ConfigError, type Env } from './config/env.js';
import type { Logger } from './logger.js';
import { DependencyMisconfiguredError, DependencyUnreachableError } from './reach-dependency.js';

/** Loads the process's configuration with `load`, or exits with the message that names the bad variable. */
export function configOrExit<C>(load: (env: Env) => C): C {
  try {
    return load(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
}

/**
 * Runs the start-up steps that reach the database, NATS and Redis; when one cannot be reached (or
 * is set up in a way the process must not run on) the process exits 1 after the one line that
 * names the variable and the address.
 */
export async function startOrExit<T>(start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (error instanceof DependencyUnreachableError || error instanceof DependencyMisconfiguredError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
}

/**
 * SIGTERM/SIGINT: stop taking work, let what is in flight finish, release resources, exit 0; a
 * bound keeps a stuck dependency from holding the process forever.
 */
export function exitOnSignals(logger: Logger, stop: () => Promise<void>, boundMs = 20_000): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error('shutdown exceeded its bound; exiting');
      process.exit(1);
    }, boundMs);
    timer.unref();
    try {
      await stop();
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
