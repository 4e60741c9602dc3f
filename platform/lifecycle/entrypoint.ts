export { configOrExit } from '../config/config-or-exit.js';
import { ConfigError } from '../config/env.js';
import type { Logger } from '../observability/logger.js';
import type { PartStack } from './parts.js';
import { SchemaBehindError } from './bootstrap.js';
import { DependencyMisconfiguredError, DependencyUnreachableError } from '../reach-dependency.js';

/**
 * Runs the start-up steps that reach the database, NATS and Redis; when one cannot be reached (or
 * is set up in a way the process must not run on) the process exits 1 after the one line that
 * names the variable and the address.
 */
export async function startOrExit<T>(start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    // Found only once start-up looks (DATA_DIR held by another running process): the operator's to fix.
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    if (
      error instanceof DependencyUnreachableError ||
      error instanceof DependencyMisconfiguredError ||
      error instanceof SchemaBehindError
    ) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
}

/**
 * SIGTERM/SIGINT, the way an orchestrator expects (docs/operations.md, "Graceful shutdown"):
 *
 * 1. drain: /readyz answers 503 at once, and every server ends each connection after its reply,
 *    while still serving, for `drainMs` (SHUTDOWN_DRAIN_MS), so the balancer takes this replica
 *    out before it stops listening;
 * 2. stop the parts in reverse order of start: servers stop accepting and finish what is in
 *    flight, the worker finishes its messages and flushes the outbox, pools close, traces flush;
 * 3. exit 0. A stuck dependency cannot hold the process past `boundMs` (exit 1).
 *
 * A second signal skips what is left of the drain period (a developer's second Ctrl-C).
 */
export function stopOnSignals(stack: PartStack, options: { logger: Logger; drainMs: number; boundMs: number }): void {
  const { logger } = options;
  let skipDrain: (() => void) | undefined;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return skipDrain?.();
    stopping = true;
    logger.info({ signal, drainMs: options.drainMs }, 'shutting down: draining');
    const bound = setTimeout(() => {
      logger.error('shutdown exceeded its bound; exiting');
      process.exit(1);
    }, options.boundMs);
    bound.unref();
    stack.drain();
    await new Promise<void>((resolve) => {
      skipDrain = resolve;
      setTimeout(resolve, options.drainMs).unref();
    });
    try {
      await stack.stop();
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
