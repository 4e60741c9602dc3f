import type { ReadinessReport } from '../http/probe-endpoints.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import { readinessOf, type ReadinessCheck } from './readiness.js';

/**
 * What a process runs, as a stack of parts: each part is started in order and stopped in reverse
 * (the last started, the first stopped), like an async disposable stack. A part that fails to start
 * unwinds the ones before it, so teardown is written once, next to what it tears down.
 *
 * The stack also holds the process's readiness: parts add the checks of what they need, and
 * `readiness()` reports them all, plus `shutdown: down` once the process is draining.
 */
export class PartStack {
  private readonly started: Array<{ name: string; stop: () => Promise<void> | void }> = [];
  private readonly drainHooks: Array<() => void> = [];
  private readonly checks: Record<string, ReadinessCheck> = {};
  private readonly groups: Array<() => Promise<ReadinessReport['checks']>> = [];
  private isDraining = false;
  private processLogger: Logger = silentLogger;

  /**
   * Starts one part and remembers how to stop it. `onDrain` runs when the process starts draining
   * (e.g. an HTTP server that starts closing keep-alive connections after each reply).
   */
  async start<T>(
    name: string,
    open: () => Promise<T>,
    stop: (value: T) => Promise<void> | void,
    onDrain?: (value: T) => void,
  ): Promise<T> {
    const value = await open();
    this.started.push({ name, stop: () => stop(value) });
    if (onDrain) this.drainHooks.push(() => onDrain(value));
    return value;
  }

  /** The process's logger: parts log with it, and stop failures are logged there. */
  useLogger(logger: Logger): void {
    this.processLogger = logger;
  }

  get logger(): Logger {
    return this.processLogger;
  }

  /** A check /readyz asks; `required` decides whether its being down makes the process unready. */
  check(name: string, check: ReadinessCheck): void {
    this.checks[name] = check;
  }

  hasCheck(name: string): boolean {
    return name in this.checks;
  }

  /** Checks that report several names at once (the gateway's subgraph replicas). */
  checkGroup(group: () => Promise<ReadinessReport['checks']>): void {
    this.groups.push(group);
  }

  /** The process's /readyz: every check added so far, and `shutdown` once draining. */
  readonly readiness = (): Promise<ReadinessReport> =>
    readinessOf(this.checks, { groups: this.groups, draining: () => this.isDraining })();

  get draining(): boolean {
    return this.isDraining;
  }

  /** Reports not ready from now on and tells the parts (servers stop keeping connections alive). */
  drain(): void {
    if (this.isDraining) return;
    this.isDraining = true;
    for (const hook of this.drainHooks) hook();
  }

  /** Stops every part in reverse order; a part that fails to stop is logged and the rest still stop. */
  async stop(): Promise<void> {
    this.drain();
    let failed = false;
    for (const part of this.started.splice(0).reverse()) {
      try {
        await part.stop();
      } catch (error) {
        failed = true;
        this.processLogger.error({ err: error, part: part.name }, `stopping ${part.name} failed`);
      }
    }
    if (failed) throw new Error('one or more parts failed to stop (logged)');
  }
}

/**
 * Starts parts on `stack` with `build` and answers what it returns; when building fails, what was
 * already started is stopped again (in reverse) before the error goes on.
 */
export async function buildParts<T>(stack: PartStack, build: (stack: PartStack) => Promise<T>): Promise<T> {
  try {
    return await build(stack);
  } catch (error) {
    await stack.stop().catch(() => undefined);
    throw error;
  }
}
