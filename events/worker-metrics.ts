import type { Db } from '../platform/db/database.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { EventWorker } from './worker.js';

const OUTBOX_CACHE_MS = 5_000;

// The event system's metrics; their names and labels are a contract (dashboards, docs/operations.md).
const OUTBOX_BACKLOG = { name: 'outbox_backlog', help: 'Outbox events not yet published to the broker.', labelNames: [] };
const OUTBOX_LAG = {
  name: 'outbox_lag_seconds',
  help: 'Age of the oldest unpublished outbox event (0 when the outbox is empty).',
  labelNames: [],
};
const DLQ_DEPTH = { name: 'dlq_depth', help: 'Messages in the dead-letter stream.', labelNames: ['stream'] };
const DLQ_ALERT = {
  name: 'dlq_alert',
  help: 'Dead-letter alert: 1 when the oldest dead letter is older than DLQ_ALERT_MINUTES (the DLQ has been non-empty that long).',
  labelNames: ['stream'],
};
const DLQ_OLDEST_AGE = {
  name: 'dlq_oldest_letter_age_seconds',
  help: 'Age of the oldest letter in the dead-letter stream, from its stream timestamp (0 when empty): the same on every replica.',
  labelNames: ['stream'],
};
const RELAY_LEADER = {
  name: 'outbox_relay_leader',
  help: 'Whether this worker holds the outbox relay lease (1) or not (0): sum over replicas is 1 while publishing works.',
  labelNames: [],
};
const OUTBOX_LISTEN_CONNECTED = {
  name: 'outbox_listen_connected',
  help: 'Whether the LISTEN for outbox commits is connected (1) or being re-established (0; the relay polls meanwhile). Absent with OUTBOX_LISTEN off.',
  labelNames: [],
};
const CONSUMER_REDELIVERIES = {
  name: 'consumer_redeliveries_total',
  help: 'Messages delivered again to a durable consumer (delivery count above 1).',
  labelNames: ['consumer'],
} as const;
const SCHEMA_DIGEST_MISMATCHES = {
  name: 'consumer_schema_digest_mismatches_total',
  help: "Consumed events whose schemaUri digest differs from our copy of the producer's schema (handled all the same).",
  labelNames: ['consumer'],
} as const;

/**
 * The event worker's metrics, read at scrape time from what the worker already tracks: outbox
 * backlog and lag (from the table, so every replica reports the same value: aggregate with max()),
 * DLQ depth, oldest letter's age and alert state (the DLQ monitor's last sample of the DLQ stream,
 * the same on every replica: aggregate with max()), consumer redeliveries (the
 * handler failures that sent a message back, per durable), and consumed events whose schemaUri
 * digest differs from our copy of the producer's schema (per durable: a closed label set).
 */
export function feedWorkerMetrics(
  metrics: Metrics,
  worker: Pick<EventWorker, 'health'>,
  deps: { db: Db; deadLetterStream: string; cacheMs?: number },
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
  const redeliveries = metrics.counter(CONSUMER_REDELIVERIES);
  const digestMismatches = metrics.counter(SCHEMA_DIGEST_MISMATCHES);
  const seen = new Map<string, number>();
  const seenDigests = new Map<string, number>();
  // Without a LISTEN (OUTBOX_LISTEN off, the embedded database) there is no series to alert on.
  const listening =
    worker.health().outboxListen === 'off'
      ? []
      : [metrics.feed(OUTBOX_LISTEN_CONNECTED, () => (worker.health().outboxListen === 'listening' ? 1 : 0))];
  const removers = [
    ...listening,
    metrics.feed(OUTBOX_BACKLOG, async () => (await outbox()).backlog),
    metrics.feed(OUTBOX_LAG, async () => (await outbox()).lag),
    metrics.feed(RELAY_LEADER, () => (worker.health().relay.leader ? 1 : 0)),
    // dlq_depth / dlq_alert are the metrics' wire names (dashboards and alerts query them).
    metrics.feed(DLQ_DEPTH, () => [{ labels: { stream: deps.deadLetterStream }, value: worker.health().deadLetters.depth }]),
    metrics.feed(DLQ_ALERT, () => [
      { labels: { stream: deps.deadLetterStream }, value: worker.health().deadLetters.alerting ? 1 : 0 },
    ]),
    metrics.feed(DLQ_OLDEST_AGE, () => [
      { labels: { stream: deps.deadLetterStream }, value: worker.health().deadLetters.oldestLetterAgeSeconds },
    ]),
    metrics.onScrape(() => {
      for (const consumer of worker.health().consumers) {
        const delta = consumer.retried - (seen.get(consumer.durable) ?? 0);
        if (delta > 0) redeliveries.inc({ consumer: consumer.durable }, delta);
        seen.set(consumer.durable, consumer.retried);
        const mismatches = consumer.schemaDigestMismatches - (seenDigests.get(consumer.durable) ?? 0);
        if (mismatches > 0) digestMismatches.inc({ consumer: consumer.durable }, mismatches);
        seenDigests.set(consumer.durable, consumer.schemaDigestMismatches);
      }
    }),
  ];
  return () => {
    for (const remove of removers) remove();
  };
}
