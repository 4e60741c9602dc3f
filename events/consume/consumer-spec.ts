import type { Db, Tx } from '../../platform/db/database.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { EventBus } from '../bus/event-bus.js';
import type { Clock } from '../../platform/clock.js';
import type { ConsumedEnvelope, EventEnvelope } from '../envelope.js';
import type { EmitInput, EventProducer } from '../publish/outbox.js';
import type { SchemaRegistry } from '../schemas/registry.js';
import type { SafetyNetStats } from './max-deliveries-safety-net.js';

// What a consumer is (the catalog's ConsumerSpec) and what the runner (consumer-runner.ts) gives
// its handlers and its caller.

export interface EventHandlerContext {
  /** The consumed event's id: the causationId of whatever the handler emits. */
  eventId: string;
  correlationId: string;
  /** The consumed message's traceparent (empty when it had none). */
  traceparent: string;
  subject: string;
  deliveryCount: number;
  logger: Logger;
  /**
   * Writes events to the outbox in the handler's transaction, caused by and correlated with the
   * consumed event and in the same trace.
   */
  emit(input: Omit<EmitInput, 'correlationId' | 'causationId'>): Promise<EventEnvelope<object>[]>;
}

/** Runs inside the consumer's transaction: write state and outbox rows with `tx` only. */
export type EventHandler = (tx: Tx, envelope: ConsumedEnvelope, ctx: EventHandlerContext) => Promise<void>;

/**
 * Handles several events, in their order, in one transaction: it must leave exactly what `handle`
 * would leave running them one after the other, with a few set-based statements instead of a
 * transaction each. Throwing fails the whole batch; the runner then handles its events one at a
 * time with `handle`, so every event still gets its own verdict (redelivery or dead letter).
 */
export type BatchEventHandler = (
  tx: Tx,
  batch: ReadonlyArray<{ envelope: ConsumedEnvelope; ctx: EventHandlerContext }>,
  /** The consumer's logger (each ctx.logger names its event). */
  logger: Logger,
) => Promise<void>;

/** A consumer of one event type and version, as the catalog plugs it into the worker. */
export interface ConsumerSpec {
  /** Durable consumer name, e.g. `catalog-svc-play-package-built`; also the inbox's consumer key. */
  durable: string;
  stream: string;
  /** Filter subject, normally `subjectFor(eventType, version)`. */
  subject: string;
  eventType: string;
  version: number;
  handle: EventHandler;
  /** Optional set-based handler; with `batchSize` above 1 the runner hands it the events it has. */
  handleBatch?: BatchEventHandler;
  /**
   * Events taken into one batch transaction (default 1: no batching). Batches run one after the
   * other (`concurrency` of them at once), each in stream order, so a consumer with concurrency 1
   * still handles its events in stream order.
   */
  batchSize?: number;
  /** Default: config `events.maxDeliver` (6 = the spec's 5 redeliveries). */
  maxDeliver?: number;
  /** Default: config `events.ackWaitSeconds`. */
  ackWaitMs?: number;
  /** 1 processes strictly one at a time across replicas (design §4); default 1000. */
  maxAckPending?: number;
  /** Messages (batches, with `handleBatch`) handled at once in this replica (default 1, in stream order). */
  concurrency?: number;
  /**
   * The partition key whose messages must be applied in stream order, across crashes and replicas
   * (e.g. the course of a built event). A message is then held while an earlier message of its
   * key is unsettled anywhere (order-guard.ts). Undefined for a message: no order to keep.
   */
  orderKey?: (envelope: ConsumedEnvelope) => string | undefined;
}

export interface StartConsumerOptions extends ConsumerSpec {
  bus: EventBus;
  db: Db;
  logger: Logger;
  registry: SchemaRegistry;
  maxDeliver: number;
  ackWaitMs: number;
  deadLetterStream: { subjectPrefix: string };
  /** Needed for `ctx.emit`. */
  producer?: EventProducer;
  clock?: Clock;
  /** Delay before a failed message is redelivered; default 1 s doubling to 60 s, jittered. */
  nakDelayMs?: (deliveryCount: number) => number;
  /** Called after a transaction in which the handler emitted events commits (wake the relay). */
  afterCommit?: () => void;
  transactionTimeoutMs?: number;
  /** How long a message waits for an earlier one of its key at most; default holdLimitMs of the delivery policy. */
  holdLimitMs?: number;
  /**
   * After a MAX_DELIVERIES advisory, how long another replica may still commit the message before
   * the safety net writes its dead letter (max-deliveries-safety-net.ts); default the ack wait.
   */
  safetyNetGraceMs?: number;
}

/** A consumer's counts: its pipeline's, and its MAX_DELIVERIES safety net's. */
export type ConsumerStats = PipelineStats & SafetyNetStats;

export interface PipelineStats {
  processed: number;
  duplicates: number;
  retried: number;
  deadLettered: number;
  /** Events whose schemaUri digest differs from our copy of the producer's schema (handled all the same). */
  schemaDigestMismatches: number;
  /** Messages held now, waiting for an earlier message of their key (orderKey). */
  held: number;
  /** Messages applied after waiting the whole hold limit for an earlier one that never settled. */
  heldPastLimit: number;
  lastError?: string;
}

export interface ConsumerHandle {
  durable: string;
  stop(): Promise<void>;
  stats(): ConsumerStats;
}
