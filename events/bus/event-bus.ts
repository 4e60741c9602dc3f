/**
 * The ports the event system talks to: `MessageBus` (publish, consume) and `StreamStore` (stream
 * administration and reading); `EventBus` is both. Two implementations keep the same rules
 * (JetStream semantics): `jetstream-bus.ts` over NATS, `in-process-bus.ts` in memory for the
 * embedded mode and tests. `test/integration/events/bus-messaging.contract.test.ts` and
 * `stream-store.contract.test.ts` hold both to them.
 */
import type { StreamShape } from './stream-config.logic.js';

export type Headers = Record<string, string>;

export interface StreamSpec {
  /** JetStream stream name: no '.', '*', '>' or whitespace. */
  name: string;
  subjects: string[];
  maxAgeMs: number;
  /** Window in which a repeated Nats-Msg-Id is dropped as a duplicate (JetStream default 2 min). */
  duplicateWindowMs?: number;
  storage?: 'file' | 'memory';
  /** Copies kept by a JetStream cluster; 1 on a single server. */
  replicas?: number;
}

export interface PublishOptions {
  /** Sent as Nats-Msg-Id: the stream drops a repeat within its duplicate window. */
  msgId?: string;
  headers?: Headers;
}

export interface PublishResult {
  stream: string;
  seq: number;
  /** True when the stream already held this msgId: the publish is a success, nothing was stored. */
  duplicate: boolean;
}

export interface DurableConsumerSpec {
  stream: string;
  durable: string;
  filterSubject: string;
  ackWaitMs: number;
  /** Counts every delivery: "5 redeliveries" is maxDeliver 6 (design §4). */
  maxDeliver: number;
  /** Unacknowledged messages the server hands out at once; 1 orders the whole consumer. */
  maxAckPending?: number;
  /**
   * Messages this subscription hands to its handler at once (default 1: one after the other, in
   * stream order). Above 1, handlers overlap and finish in any order: only for handlers that order
   * what must be ordered themselves, as the catalog's do (course row lock, per-course sequence).
   */
  concurrency?: number;
}

export interface BusMessage {
  subject: string;
  data: Uint8Array;
  headers: Headers;
  /** Stream sequence. */
  seq: number;
  /** 1 on the first delivery. */
  deliveryCount: number;
  redelivered: boolean;
  ack(): void;
  /** Redeliver after `delayMs` (immediately when omitted), counting a delivery. */
  nak(delayMs?: number): void;
  /** Never deliver again to this consumer. */
  term(reason?: string): void;
  /** Restart the ack-wait timer for a message still being worked on. */
  working(): void;
}

export type MessageHandler = (message: BusMessage) => Promise<void>;

/** What `MessageBus.follow` calls: each message as it is published, and a possible gap. */
export interface Follower {
  /** `headers` as published (a follower may read what the publisher stamped, e.g. a commit time). */
  onMessage(subject: string, data: Uint8Array, headers: Headers): void;
  /** Some messages may have been missed; the follow goes on (after a reconnect, a link back). */
  onGap(): void;
  /**
   * The follow cannot hear anything now: the connection dropped, or it stopped answering pings
   * (a half-open link). `onGap` follows when it hears again.
   */
  onLost?(): void;
}

export interface Subscription {
  /** Stop pulling; the message in hand finishes, prefetched ones go back at once. */
  stop(): Promise<void>;
}

export interface StoredMessage {
  stream: string;
  seq: number;
  subject: string;
  data: Uint8Array;
  headers: Headers;
  time: Date;
}

export interface ReadStreamOptions {
  filterSubject?: string;
  fromSeq?: number;
  toSeq?: number;
  maxCount?: number;
}

export interface ReadPagesOptions extends ReadStreamOptions {
  /** At most this many messages per page (default 256): what a reader holds at once. */
  pageSize?: number;
  /** Headers only, `data` empty: a scan that decides from headers which bodies it needs. */
  headersOnly?: boolean;
}

export interface StreamState {
  messages: number;
  firstSeq: number;
  lastSeq: number;
  /** When the first message still stored was stored; undefined when the stream is empty. */
  firstTime?: Date;
}

export interface MaxDeliveriesAdvisory {
  stream: string;
  consumer: string;
  streamSeq: number;
  deliveries: number;
}

/** What ensureStream did. */
export type StreamOutcome = 'created' | 'updated' | 'unchanged';

/**
 * Messaging, what every adapter gives: publish, durable consumption, and the advisory of a message
 * that ran out of deliveries. Code that only sends or receives takes this port.
 */
export interface MessageBus {
  readonly kind: 'jetstream' | 'in-process';
  publish(subject: string, data: Uint8Array, options?: PublishOptions): Promise<PublishResult>;
  /** Creates or updates the durable consumer, then delivers to `handler` (`spec.concurrency` at a time, default one). */
  consume(spec: DurableConsumerSpec, handler: MessageHandler): Promise<Subscription>;
  /**
   * JetStream's MAX_DELIVERIES advisory: a message ran out of deliveries without a verdict (the
   * process died on its last attempt). The consumer runner uses it as the dead-letter safety net.
   */
  onMaxDeliveries(listener: (advisory: MaxDeliveriesAdvisory) => void): () => void;
  /**
   * Every message published from now on to a subject matching one of `filters` (NATS wildcards),
   * for followers that keep no position and only react to what happens (the gateway's response
   * cache: every replica hears every event). No consumer state on the server, no acknowledgement,
   * no replay of what was missed: `onLost` says when nothing can be heard, `onGap` when some may have
   * been missed (JetStream: the connection was lost, or stopped answering, and came back; in process
   * nothing is ever missed). A publish JetStream drops as a
   * duplicate may still be seen (core NATS delivers every publish), so a follower must be
   * idempotent; anything that must not miss a message takes a durable consumer. Resolves, once
   * following, to the function that stops.
   */
  follow(filters: readonly string[], follower: Follower): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/**
 * The stored side of the bus: administration of streams and durable consumers, and reading what a
 * stream stores. Taken only by the code that needs it: stream setup (events/streams.ts), ordering,
 * dead-letter listing, replay and monitoring, retention, the publish CLI's stream check.
 */
export interface StreamStore {
  /**
   * Creates the stream as `spec` says when it is missing. An existing stream keeps what its
   * operator set: only subjects it lacks are added and replicas raised, never lowered
   * (stream-config.logic.ts).
   */
  ensureStream(spec: StreamSpec): Promise<StreamOutcome>;
  /** The stream's subjects and replicas, or undefined when it does not exist. */
  streamConfig(name: string): Promise<(StreamShape & { maxAgeMs: number }) | undefined>;
  deleteStream(name: string): Promise<void>;
  streamState(name: string): Promise<StreamState>;
  deleteConsumer(stream: string, durable: string): Promise<void>;
  /**
   * The stream sequence of a durable consumer's ack floor: every message of its filter at or below
   * it is settled (acknowledged, terminated, or out of deliveries); above it some may be in hand
   * somewhere. 0 before the first is settled.
   */
  consumerAckFloor(stream: string, durable: string): Promise<number>;
  /**
   * Stored messages of a stream in sequence order, optionally only those matching a subject
   * filter, from `fromSeq` up to `toSeq` (both inclusive), at most `maxCount`.
   */
  readStream(stream: string, options?: ReadStreamOptions): Promise<StoredMessage[]>;
  /**
   * What readStream reads, a page at a time, so a reader of a large stream holds one page (and,
   * with `headersOnly`, no bodies). Leaving the loop early ends the read.
   */
  readPages(stream: string, options?: ReadPagesOptions): AsyncIterable<StoredMessage[]>;
  getMessage(stream: string, seq: number): Promise<StoredMessage | undefined>;
  deleteMessage(stream: string, seq: number): Promise<boolean>;
}

/** Both ports: what the adapters implement, and what code that needs both (the worker, consumers) takes. */
export type EventBus = MessageBus & StreamStore;

export const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

/** Every message of a paged read, in order. */
export async function collectPages(pages: AsyncIterable<StoredMessage[]>): Promise<StoredMessage[]> {
  const out: StoredMessage[] = [];
  for await (const page of pages) out.push(...page);
  return out;
}
