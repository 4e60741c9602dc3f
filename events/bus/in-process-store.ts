import type { Clock } from '../../platform/clock.js';
import {
  collectPages,
  DEFAULT_DUPLICATE_WINDOW_MS,
  type DurableConsumerSpec,
  type Follower,
  type MaxDeliveriesAdvisory,
  type MessageHandler,
  type ReadPagesOptions,
  type StoredMessage,
  type StreamSpec,
  type StreamState,
  type StreamStore,
} from './event-bus.js';
import { streamChanges } from './stream-config.logic.js';
import { subjectMatches } from './subject.logic.js';

/*
 * The stored side of the in-process bus (StreamStore): its state, stream administration, consumer
 * ack floors and reads. Delivery (publish, consume, redelivery, the advisory) is in-process-bus.ts.
 */

export interface MemStream {
  spec: StreamSpec;
  messages: Map<number, StoredMessage>;
  lastSeq: number;
  dedup: Map<string, { seq: number; at: number }>;
  consumers: Map<string, MemConsumer>;
}

export interface MemConsumer {
  spec: DurableConsumerSpec;
  /** Next stream sequence never delivered to this consumer. */
  nextSeq: number;
  /** Delivered and not yet acknowledged (includes naks waiting out their delay). */
  pending: Map<number, { timer?: NodeJS.Timeout }>;
  /** Ready to be delivered again, lowest sequence first. */
  redeliver: Set<number>;
  deliveries: Map<number, number>;
  subs: MemSubscription[];
}

export interface MemSubscription {
  handler: MessageHandler;
  /** Handlers running now; at most the consumer's `concurrency`. */
  inFlight: Set<Promise<void>>;
  stopped: boolean;
}

/** The bus's whole state: its streams, who listens for advisories, and whether it is closed. */
export interface MemBus {
  clock: Clock;
  streams: Map<string, MemStream>;
  advisoryListeners: Set<(advisory: MaxDeliveriesAdvisory) => void>;
  /** Followers (`follow`), each with its subject filters. */
  followers: Set<{ filters: readonly string[]; follower: Follower }>;
  closed: boolean;
}

/** JetStream's stream administration and reads over the in-process bus's state. */
export function inProcessStreamStore(bus: MemBus): StreamStore {
  return {
    async ensureStream(spec) {
      const existing = bus.streams.get(spec.name);
      if (!existing) {
        bus.streams.set(spec.name, {
          spec: { ...spec },
          messages: new Map(),
          lastSeq: 0,
          dedup: new Map(),
          consumers: new Map(),
        });
        return 'created';
      }
      const changes = streamChanges(
        { subjects: existing.spec.subjects, replicas: existing.spec.replicas ?? 1 },
        { subjects: spec.subjects, replicas: spec.replicas ?? 1 },
      );
      if (!changes) return 'unchanged';
      existing.spec = { ...existing.spec, subjects: [...changes.subjects], replicas: changes.replicas };
      return 'updated';
    },
    async streamConfig(name) {
      const stream = bus.streams.get(name);
      if (!stream) return undefined;
      return { subjects: [...stream.spec.subjects], replicas: stream.spec.replicas ?? 1, maxAgeMs: stream.spec.maxAgeMs };
    },
    async deleteStream(name) {
      const stream = bus.streams.get(name);
      if (!stream) return;
      for (const consumer of stream.consumers.values()) stopConsumer(consumer);
      bus.streams.delete(name);
    },
    async streamState(name): Promise<StreamState> {
      const stream = streamOf(bus, name);
      const seqs = [...stream.messages.keys()];
      const first = seqs.length ? stream.messages.get(seqs[0]) : undefined;
      return {
        messages: seqs.length,
        firstSeq: seqs[0] ?? stream.lastSeq + 1,
        lastSeq: stream.lastSeq,
        ...(first ? { firstTime: new Date(first.time) } : {}),
      };
    },
    async deleteConsumer(streamName, durable) {
      const stream = bus.streams.get(streamName);
      const consumer = stream?.consumers.get(durable);
      if (!stream || !consumer) return;
      stopConsumer(consumer);
      stream.consumers.delete(durable);
    },
    async consumerAckFloor(streamName, durable) {
      const consumer = streamOf(bus, streamName).consumers.get(durable);
      if (!consumer) throw new Error(`consumer not found: ${durable}`);
      // Everything below the lowest message still in hand, waiting for redelivery, or never delivered.
      const unsettled = Math.min(...consumer.pending.keys(), ...consumer.redeliver, consumer.nextSeq);
      return unsettled - 1;
    },
    readStream: (name, opts = {}) => collectPages(readPages(bus, name, opts)),
    readPages: (name, opts = {}) => readPages(bus, name, opts),
    async getMessage(name, seq) {
      const message = streamOf(bus, name).messages.get(seq);
      return message ? copy(message) : undefined;
    },
    async deleteMessage(name, seq) {
      return streamOf(bus, name).messages.delete(seq);
    },
  };
}

/** The stream's messages in order, `pageSize` at a time; the stream is read as the pages are taken. */
async function* readPages(bus: MemBus, name: string, opts: ReadPagesOptions): AsyncGenerator<StoredMessage[]> {
  const stream = streamOf(bus, name);
  const pageSize = opts.pageSize ?? 256;
  let page: StoredMessage[] = [];
  let taken = 0;
  for (const message of stream.messages.values()) {
    if (opts.maxCount !== undefined && taken >= opts.maxCount) break;
    if (opts.toSeq !== undefined && message.seq > opts.toSeq) break;
    if (opts.fromSeq !== undefined && message.seq < opts.fromSeq) continue;
    if (opts.filterSubject && !subjectMatches(opts.filterSubject, message.subject)) continue;
    page.push(opts.headersOnly ? { ...message, headers: { ...message.headers }, data: new Uint8Array(0) } : copy(message));
    taken++;
    if (page.length >= pageSize) {
      yield page;
      page = [];
    }
  }
  if (page.length) yield page;
}

export function streamOf(bus: MemBus, name: string): MemStream {
  const stream = bus.streams.get(name);
  if (!stream) throw new Error(`stream not found: ${name}`);
  prune(bus, stream);
  return stream;
}

/** Drops messages past the stream's max age and message ids past the duplicate window. */
export function prune(bus: MemBus, stream: MemStream): void {
  const now = bus.clock.now().getTime();
  for (const [seq, message] of stream.messages) {
    if (now - message.time.getTime() <= stream.spec.maxAgeMs) break;
    stream.messages.delete(seq);
  }
  // Ids are added in publish order, so the oldest come first: stop at the first one still inside
  // the window. Scanning the whole map instead cost every publish a pass over two minutes of ids
  // (tens of thousands at the assist bench's rate: 3.5 % of the embedded system's CPU in its profile).
  const window = stream.spec.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
  for (const [id, entry] of stream.dedup) {
    if (now - entry.at <= window) break;
    stream.dedup.delete(id);
  }
}

export function stopConsumer(consumer: MemConsumer): void {
  for (const sub of consumer.subs) sub.stopped = true;
  consumer.subs = [];
  for (const entry of consumer.pending.values()) clearTimeout(entry.timer);
}

function copy(message: StoredMessage): StoredMessage {
  return { ...message, headers: { ...message.headers }, data: Uint8Array.from(message.data) };
}
