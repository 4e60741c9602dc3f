import type { Logger } from '../../platform/observability/logger.js';
import { systemClock, type Clock } from '../../platform/clock.js';
import type { StreamStore } from '../bus/event-bus.js';
import {
  initialDeadLetterAlertState,
  nextDeadLetterAlertState,
  oldestLetterAgeSeconds,
  type DeadLetterAlertState,
  type DeadLetterSample,
} from './dead-letter-monitor.logic.js';
import { oneLine } from '../error-text.logic.js';

/** The DLQ's depth and its oldest letter's storage time, as the stream (shared by every replica) says. */
export async function sampleDeadLetters(bus: StreamStore, deadLetterStream: { stream: string }): Promise<DeadLetterSample> {
  const state = await bus.streamState(deadLetterStream.stream);
  return { depth: state.messages, ...(state.firstTime ? { oldestAt: state.firstTime } : {}) };
}

export interface DeadLetterMonitor {
  /** Samples the DLQ once and applies the alert rule. */
  check(): Promise<DeadLetterAlertState>;
  start(intervalMs?: number): void;
  stop(): void;
  /** The last sample, its oldest letter's age brought up to now. */
  state(): DeadLetterAlertState;
  readonly alerting: boolean;
}

export interface DeadLetterMonitorOptions {
  sample: () => Promise<DeadLetterSample>;
  alertAfterMs: number;
  logger: Logger;
  clock?: Clock;
  /**
   * Whether this process announces a change of the verdict in its log (default: always). The
   * worker passes "leads the outbox relay", so N replicas log one line, not N; the alert itself
   * is the metric rule (docs/operations.md), which is the same on every replica.
   */
  announces?: () => boolean;
}

export function createDeadLetterMonitor(options: DeadLetterMonitorOptions): DeadLetterMonitor {
  const clock = options.clock ?? systemClock;
  let state: DeadLetterAlertState | undefined;
  let timer: NodeJS.Timeout | undefined;
  const announce = (next: DeadLetterAlertState, transition: 'raised' | 'cleared') => {
    if (options.announces && !options.announces()) return;
    if (transition === 'raised') {
      options.logger.error(
        {
          alert: 'dlq_depth',
          depth: next.depth,
          oldestLetterAt: next.oldestLetterAt,
          thresholdMinutes: options.alertAfterMs / 60_000,
        },
        'the oldest dead letter has been in the DLQ for longer than the alert threshold',
      );
    } else options.logger.info({ alert: 'dlq_depth' }, 'no dead letter older than the alert threshold; alert cleared');
  };
  const current = (): DeadLetterAlertState => {
    if (!state?.oldestLetterAt) return { ...(state ?? initialDeadLetterAlertState) };
    const age = oldestLetterAgeSeconds(new Date(state.oldestLetterAt), clock.now());
    return { ...state, oldestLetterAgeSeconds: age, alerting: age * 1000 > options.alertAfterMs };
  };
  const monitor: DeadLetterMonitor = {
    async check() {
      const next = nextDeadLetterAlertState(state, await options.sample(), clock.now(), options.alertAfterMs);
      state = next.state;
      if (next.transition) announce(next.state, next.transition);
      return { ...state };
    },
    start(intervalMs = 30_000) {
      if (timer) return;
      timer = setInterval(() => {
        monitor.check().catch((error: unknown) => options.logger.warn({ err: oneLine(error) }, 'DLQ check failed'));
      }, intervalMs);
      timer.unref?.();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
    state: current,
    get alerting() {
      return current().alerting;
    },
  };
  return monitor;
}
