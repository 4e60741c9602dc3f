import type { PlatformConfig } from '../platform/config/config.js';
import { ConfigError, envBool, envInt, envString, type Env } from '../platform/config/env.js';

/** The event system's configuration slice: its streams, consumers, retention and alerting. */
export interface EventsConfig {
  catalogStream: string;
  dlqStream: string;
  contentStream: string;
  authoringStream: string;
  gdprStream: string;
  auditStream: string;
  /** AI gateway domain events (ai.review.completed.v1). */
  aiStream: string;
  dualPublishDays: number;
  archiveMonths: number;
  /** How often each event worker purges outbox and inbox rows past the archive retention. */
  retentionIntervalMinutes: number;
  dlqAlertMinutes: number;
  /**
   * The outbox relay's leadership lease: a leader that stops renewing it (paused, cut off) loses it
   * after this long, and another worker takes over; also how long a frozen leader's transaction
   * may stay idle before Postgres ends it.
   */
  relayLeaseSeconds: number;
  /**
   * How often the relay leader looks for unpublished outbox rows when nothing woke it. A commit in
   * the worker's own process wakes it at once; rows committed by another process (the catalog, the
   * AI subgraph) wait for this poll, so it bounds their publish delay (and the response cache's
   * staleness). One indexed read of an empty partial index per poll.
   */
  relayPollIntervalMs: number;
  /**
   * The relay leader LISTENs for outbox commits (a trigger NOTIFYs at each commit) and publishes at
   * once, whichever process committed; the poll stays as the fallback. One connection per worker
   * replica. Off behind a transaction-mode pooler (PgBouncer), which cannot hold a LISTEN. Only
   * with DATABASE_URL (the embedded database has one process, whose commits wake the relay anyway).
   */
  relayListen: boolean;
  maxDeliver: number;
  ackWaitSeconds: number;
  /** Messages (batches, where a consumer batches) each catalog consumer handles at once (1 = in stream order). */
  consumerConcurrency: number;
  /** Events a batching consumer (content.play_package.built) takes into one transaction. */
  consumerBatchSize: number;
  /** JetStream replicas of the streams this service creates (it never lowers an existing stream's). */
  streamReplicas: number;
  /**
   * Development mode of the event system: also create the producers' streams (CONTENT,
   * AUTHORING, GDPR) when missing. On by default without NATS_URL (the in-process bus has no
   * producers), off with it: in production those streams are their producers' to create and
   * configure, and the catalog never touches them.
   */
  createProducerStreams: boolean;
}

/** How the slice sits in a process's configuration. */
export interface EventsSlice {
  events: EventsConfig;
}

function streamName(env: Env, name: string, fallback: string): string {
  const value = envString(env, name) ?? fallback;
  // JetStream stream names may not contain '.', spaces, '*', '>' or path separators.
  if (!/^[A-Za-z0-9_-]+$/.test(value)) throw new ConfigError(name, `is not a valid JetStream stream name: "${value}"`);
  return value;
}

export function loadEventsSlice(env: Env, platform: Pick<PlatformConfig, 'natsUrl'>): EventsSlice {
  return {
    events: {
      catalogStream: streamName(env, 'CATALOG_STREAM', 'CATALOG'),
      dlqStream: streamName(env, 'CATALOG_DLQ_STREAM', 'CATALOG_DLQ'),
      contentStream: streamName(env, 'CONTENT_STREAM', 'CONTENT'),
      authoringStream: streamName(env, 'AUTHORING_STREAM', 'AUTHORING'),
      gdprStream: streamName(env, 'GDPR_STREAM', 'GDPR'),
      auditStream: streamName(env, 'AUDIT_STREAM', 'AUDIT'),
      aiStream: streamName(env, 'AI_STREAM', 'AI'),
      dualPublishDays: envInt(env, 'DUAL_PUBLISH_DAYS', 30, 0, 365),
      archiveMonths: envInt(env, 'OUTBOX_ARCHIVE_MONTHS', 13, 1, 120),
      retentionIntervalMinutes: envInt(env, 'EVENT_RETENTION_INTERVAL_MINUTES', 60, 1, 1440),
      dlqAlertMinutes: envInt(env, 'DLQ_ALERT_MINUTES', 10, 1, 1440),
      relayLeaseSeconds: envInt(env, 'OUTBOX_RELAY_LEASE_SECONDS', 10, 2, 600),
      relayPollIntervalMs: envInt(env, 'OUTBOX_POLL_INTERVAL_MS', 100, 10, 60_000),
      relayListen: envBool(env, 'OUTBOX_LISTEN', true),
      maxDeliver: envInt(env, 'CONSUMER_MAX_DELIVER', 6, 1, 100),
      // The spec's 30 s. A message handed to a pull on a frozen server comes back this long after,
      // which bounds how soon consumption resumes there (docs/reliability.md, "Half-open links").
      ackWaitSeconds: envInt(env, 'CONSUMER_ACK_WAIT_SECONDS', 30, 1, 3600),
      consumerConcurrency: envInt(env, 'CONSUMER_CONCURRENCY', 1, 1, 64),
      consumerBatchSize: envInt(env, 'CONSUMER_BATCH_SIZE', 100, 1, 500),
      streamReplicas: envInt(env, 'STREAM_REPLICAS', 1, 1, 5),
      createProducerStreams: envBool(env, 'CREATE_PRODUCER_STREAMS', !platform.natsUrl),
    },
  };
}
