import type { Db } from '../platform/db/database.js';
import type { Metrics } from '../platform/metrics.js';
import type { EventWorker } from './worker.js';

const OUTBOX_CACHE_MS = 5_000;

/**
 * The event worker's metrics, read at scrape time from what the worker already tracks: outbox
 * backlog and lag (from the table, so every replica reports the same value: aggregate with max()),
 * DLQ depth and alert state (the DLQ monitor's last sample), and consumer redeliveries (the
 * handler failures that sent a message back, per durable).
 */
export function feedWorkerMetrics(
  metrics: Metrics,
  worker: Pick<EventWorker, 'health'>,
  deps: { db: Db; dlqStream: string; cacheMs?: number },
): () => void {
  const cacheMs = deps.cacheMs ?? OUTBOX_CACHE_MS;
  let cached: { at: number; row: Promise<{ backlog: number; lag: number }> } | undefined;
  const outbox = () => {
    if (!cached || Date.now() - cached.at >= cacheMs) {
      const row = deps.db.$queryRaw<Array<{ backlog: number; lag: number | null }>>`
          SELECT count(*)::int AS backlog, EXTRACT(EPOCH FROM (now() - min("createdAt")))::float8 AS lag
            FROM "OutboxEvent" WHERE "publishedAt" IS NULL`.then(([first]) => ({
        backlog: first?.backlog ?? 0,
        lag: Math.max(0, first?.lag ?? 0),
      }));
      cached = { at: Date.now(), row };
      row.catch(() => (cached = undefined));
    }
    return cached.row;
  };
  const seen = new Map<string, number>();
  const removers = [
    metrics.feed('outbox_backlog', async () => (await outbox()).backlog),
    metrics.feed('outbox_lag_seconds', async () => (await outbox()).lag),
    metrics.feed('dlq_depth', () => [{ labels: { stream: deps.dlqStream }, value: worker.health().dlq.depth }]),
    metrics.feed('dlq_alert', () => [{ labels: { stream: deps.dlqStream }, value: worker.health().dlq.alerting ? 1 : 0 }]),
    metrics.onScrape(() => {
      for (const consumer of worker.health().consumers) {
        const delta = consumer.retried - (seen.get(consumer.durable) ?? 0);
        if (delta > 0) metrics.consumerRedeliveries.inc({ consumer: consumer.durable }, delta);
        seen.set(consumer.durable, consumer.retried);
      }
    }),
  ];
  return () => {
    for (const remove of removers) remove();
  };
}
