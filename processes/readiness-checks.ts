import type { Redis } from 'ioredis';
import type { EventBus } from '../events/bus/event-bus.js';
import type { EventWorker } from '../events/worker.js';
import type { Db } from '../platform/db/database.js';
import { databaseCheck, readinessOf, redisCheck, stateCheck, type ReadinessCheck } from '../platform/readiness.js';
import { QUOTA_DEGRADED_DETAIL } from '../subgraphs/ai/quota/quota.service.js';

/*
 * What each part needs to serve, as its /readyz reports it (docs/operations.md, "Probes"). A
 * required check down makes the part not ready; a degraded one is reported and served around.
 */

/** The catalog subgraph: its database; the bus only for replaying dead letters. */
export function catalogReadiness(db: Db, bus: EventBus | undefined, dlqStream: string) {
  return readinessOf({ database: databaseCheck(db), ...(bus ? { events: busCheck(bus, dlqStream, false) } : {}) });
}

/** The AI subgraph: its database; Redis holds quotas, which fall back to a local cap without it. */
export function aiReadiness(db: Db, redis: Redis | undefined) {
  return readinessOf({
    database: databaseCheck(db),
    ...(redis ? { quota: redisCheck(redis, { status: 'degraded', detail: QUOTA_DEGRADED_DETAIL }) } : {}),
  });
}

/** The event worker: its database and the bus, and its relay's and DLQ's state. */
export function workerReadiness(db: Db, bus: EventBus, dlqStream: string, worker: () => EventWorker | undefined) {
  return readinessOf({ database: databaseCheck(db), bus: busCheck(bus, dlqStream, true), events: eventWorkerCheck(worker) });
}

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

/** The worker's own state: a failing relay or a DLQ alert shows as degraded without failing readiness. */
export function eventWorkerCheck(worker: () => EventWorker | undefined): ReadinessCheck {
  return stateCheck(true, () => {
    const running = worker();
    if (!running) return { status: 'down', detail: 'event worker not started' };
    const health = running.health();
    const detail = [
      health.relay.consecutiveFailures > 0 ? `outbox relay failing (${health.relay.consecutiveFailures} attempts)` : undefined,
      health.deadLetters.alerting ? 'DLQ depth above 0 for longer than the alert window' : undefined,
    ].filter(Boolean);
    return detail.length ? { status: 'degraded', detail: detail.join('; ') } : { status: 'up' };
  });
}
