import { ConfigError, loadConfig, type Config } from './config/config.js';
import type { Logger } from './logger.js';

/** Loads the configuration or exits with the message that names the bad variable. */
export function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
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
