import type { EventBus } from '../events/bus/event-bus.js';
import type { PendingWorker } from '../events/worker-when-streams.js';
import { stateCheck, type ReadinessCheck } from '../platform/lifecycle/readiness.js';

/**
 * The broker answers a stream request (JetStream's API, or the in-process bus). `required`: the
 * event worker cannot work without it; the catalog only needs it to replay dead letters.
 */
export function busCheck(bus: EventBus, stream: string, required: boolean): ReadinessCheck {
  return {
    required,
    async run() {
      try {
        await bus.streamState(stream);
        return { status: 'up' };
      } catch (error) {
        const detail = `event bus unreachable: ${(error as Error).message}`;
        return required ? { status: 'down', detail } : { status: 'degraded', detail: `${detail}; replayDeadLetters answers 503` };
      }
    },
  };
}

/**
 * The worker's own state: not started (waiting for the producers' streams, named) is down; a
 * failing relay or a DLQ alert shows as degraded without failing readiness.
 */
export function eventWorkerCheck(worker: Pick<PendingWorker, 'current' | 'waitingFor'>): ReadinessCheck {
  return stateCheck(true, () => {
    const running = worker.current();
    if (!running) return { status: 'down', detail: worker.waitingFor() ?? 'event worker not started' };
    const health = running.health();
    const detail = [
      health.relay.consecutiveFailures > 0 ? `outbox relay failing (${health.relay.consecutiveFailures} attempts)` : undefined,
      health.deadLetters.alerting ? 'DLQ depth above 0 for longer than the alert window' : undefined,
    ].filter(Boolean);
    return detail.length ? { status: 'degraded', detail: detail.join('; ') } : { status: 'up' };
  });
}
