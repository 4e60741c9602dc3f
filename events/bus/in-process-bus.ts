import { systemClock, type Clock } from '../../platform/clock.js';
import {
  type BusMessage,
  type DurableConsumerSpec,
  type EventBus,
  type MessageHandler,
  type PublishOptions,
  type PublishResult,
  type Subscription,
} from './event-bus.js';
import {
  inProcessStreamStore,
  prune,
  stopConsumer,
  streamOf,
  type MemBus,
  type MemConsumer,
  type MemStream,
  type MemSubscription,
} from './in-process-store.js';
import { subjectMatches } from './subject.logic.js';

/**
 * JetStream's delivery rules in memory, for the embedded mode (no NATS_URL) and tests: streams
 * with sequences, a Nats-Msg-Id duplicate window and max age; durable consumers with ack wait,
 * redelivery, nak delay, term, max deliveries (with the advisory) and max ack pending. Timers
 * exist only where JetStream has a clock: ack wait and nak delay. This file delivers (MessageBus);
 * the stored side, stream administration and reads (StreamStore), is in-process-store.ts.
 */
export function createInProcessBus(options: { clock?: Clock } = {}): EventBus {
  const bus: MemBus = {
    clock: options.clock ?? systemClock,
    streams: new Map(),
    advisoryListeners: new Set(),
    followers: new Set(),
    closed: false,
  };
  return {
    kind: 'in-process',
    ...inProcessStreamStore(bus),
    publish: (subject, data, opts: PublishOptions = {}) => publish(bus, subject, data, opts),
    consume: (spec, handler) => consume(bus, spec, handler),
    onMaxDeliveries(listener) {
      bus.advisoryListeners.add(listener);
      return () => bus.advisoryListeners.delete(listener);
    },
    // Nothing published in process is ever missed: a follower here never hears of a gap.
    async follow(filters, follower) {
      const entry = { filters, follower };
      bus.followers.add(entry);
      return async () => {
        bus.followers.delete(entry);
      };
    },
    close: () => close(bus),
  };
}

async function publish(bus: MemBus, subject: string, data: Uint8Array, opts: PublishOptions): Promise<PublishResult> {
  if (bus.closed) throw new Error('bus is closed');
  const stream = [...bus.streams.values()].find((s) => s.spec.subjects.some((filter) => subjectMatches(filter, subject)));
  if (!stream) throw new Error(`no stream holds subject ${subject}`);
  prune(bus, stream);
  if (opts.msgId) {
    const seen = stream.dedup.get(opts.msgId);
    if (seen) return { stream: stream.spec.name, seq: seen.seq, duplicate: true };
  }
  const seq = ++stream.lastSeq;
  const headers = { ...(opts.headers ?? {}), ...(opts.msgId ? { 'Nats-Msg-Id': opts.msgId } : {}) };
  stream.messages.set(seq, {
    stream: stream.spec.name,
    seq,
    subject,
    data: Uint8Array.from(data),
    headers,
    time: bus.clock.now(),
  });
  if (opts.msgId) stream.dedup.set(opts.msgId, { seq, at: bus.clock.now().getTime() });
  // Delivery is decoupled from the publisher, as over the network: a publisher holding a
  // database transaction must never wait for a consumer that needs the same database.
  queueMicrotask(() => {
    for (const consumer of stream.consumers.values()) pump(bus, stream, consumer);
    for (const { filters, follower } of bus.followers) {
      if (filters.some((filter) => subjectMatches(filter, subject))) follower.onMessage(subject, data, { ...headers });
    }
  });
  return { stream: stream.spec.name, seq, duplicate: false };
}

async function consume(bus: MemBus, spec: DurableConsumerSpec, handler: MessageHandler): Promise<Subscription> {
  const stream = streamOf(bus, spec.stream);
  let consumer = stream.consumers.get(spec.durable);
  if (consumer && consumer.spec.filterSubject !== spec.filterSubject) {
    throw new Error(`consumer ${spec.durable} exists with filter ${consumer.spec.filterSubject}; delete it to change the filter`);
  }
  if (consumer) consumer.spec = { ...spec };
  else {
    consumer = { spec: { ...spec }, nextSeq: 1, pending: new Map(), redeliver: new Set(), deliveries: new Map(), subs: [] };
    stream.consumers.set(spec.durable, consumer);
  }
  const sub: MemSubscription = { handler, inFlight: new Set(), stopped: false };
  consumer.subs.push(sub);
  const owner = consumer;
  queueMicrotask(() => pump(bus, stream, owner));
  return {
    stop: async () => {
      sub.stopped = true;
      owner.subs = owner.subs.filter((s) => s !== sub);
      await Promise.all(sub.inFlight);
    },
  };
}

async function close(bus: MemBus): Promise<void> {
  bus.closed = true;
  const inFlight: Array<Promise<void> | undefined> = [];
  for (const stream of bus.streams.values()) {
    for (const consumer of stream.consumers.values()) {
      inFlight.push(...consumer.subs.flatMap((s) => [...s.inFlight]));
      stopConsumer(consumer);
    }
  }
  await Promise.all(inFlight);
}

/** The next sequence to hand this consumer: a redelivery first, then the next new message (within max ack pending). */
function nextFor(stream: MemStream, consumer: MemConsumer): number | undefined {
  for (const seq of [...consumer.redeliver].sort((a, b) => a - b)) {
    consumer.redeliver.delete(seq);
    if (stream.messages.has(seq)) return seq;
    consumer.deliveries.delete(seq);
  }
  if (consumer.pending.size >= (consumer.spec.maxAckPending ?? Number.POSITIVE_INFINITY)) return undefined;
  for (let seq = consumer.nextSeq; seq <= stream.lastSeq; seq++) {
    const message = stream.messages.get(seq);
    consumer.nextSeq = seq + 1;
    if (message && subjectMatches(consumer.spec.filterSubject, message.subject)) return seq;
  }
  return undefined;
}

/** Hands out messages while the consumer's subscriptions have free handler slots. */
function pump(bus: MemBus, stream: MemStream, consumer: MemConsumer): void {
  if (bus.closed) return;
  for (const sub of consumer.subs) {
    while (!sub.stopped && sub.inFlight.size < Math.max(1, consumer.spec.concurrency ?? 1)) {
      // A redelivery may go out even at max ack pending: it is already counted as pending.
      const seq = nextFor(stream, consumer);
      if (seq === undefined) return;
      deliver(bus, stream, consumer, sub, seq);
    }
  }
}

/** The ack wait (or nak delay) ran out: redeliver, or, past max deliveries, raise the advisory. */
function expire(bus: MemBus, stream: MemStream, consumer: MemConsumer, seq: number): void {
  const entry = consumer.pending.get(seq);
  if (!entry) return;
  clearTimeout(entry.timer);
  consumer.pending.delete(seq);
  const deliveries = consumer.deliveries.get(seq) ?? 0;
  if (deliveries >= consumer.spec.maxDeliver) {
    consumer.deliveries.delete(seq);
    const advisory = { stream: stream.spec.name, consumer: consumer.spec.durable, streamSeq: seq, deliveries };
    for (const listener of bus.advisoryListeners) listener(advisory);
  } else {
    consumer.redeliver.add(seq);
  }
  pump(bus, stream, consumer);
}

/** Acked or termed: the message is done for this consumer. */
function settle(bus: MemBus, stream: MemStream, consumer: MemConsumer, seq: number): void {
  const entry = consumer.pending.get(seq);
  if (entry) clearTimeout(entry.timer);
  consumer.pending.delete(seq);
  consumer.redeliver.delete(seq);
  consumer.deliveries.delete(seq);
  pump(bus, stream, consumer);
}

function deliver(bus: MemBus, stream: MemStream, consumer: MemConsumer, sub: MemSubscription, seq: number): void {
  const deliveryCount = (consumer.deliveries.get(seq) ?? 0) + 1;
  consumer.deliveries.set(seq, deliveryCount);
  consumer.pending.set(seq, {});
  const message = deliveryOf(bus, stream, consumer, seq, deliveryCount);
  const handled = (async () => {
    try {
      await sub.handler(message);
    } catch {
      // A handler that throws gives no verdict: the ack wait redelivers, as on JetStream.
    }
  })();
  sub.inFlight.add(handled);
  void handled.finally(() => {
    sub.inFlight.delete(handled);
    queueMicrotask(() => pump(bus, stream, consumer));
  });
}

/** One delivery of a message, its ack wait armed; only its first verdict counts. */
function deliveryOf(bus: MemBus, stream: MemStream, consumer: MemConsumer, seq: number, deliveryCount: number): BusMessage {
  const stored = stream.messages.get(seq)!;
  const arm = (ms: number) => {
    const entry = consumer.pending.get(seq);
    if (!entry) return;
    clearTimeout(entry.timer);
    entry.timer = setTimeout(() => expire(bus, stream, consumer, seq), ms);
    entry.timer.unref?.();
  };
  arm(consumer.spec.ackWaitMs);
  let settled = false;
  // Only this delivery's first verdict counts, as with JetStream's per-delivery reply subject.
  const once = (fn: () => void) => () => {
    if (settled || !consumer.pending.has(seq)) return;
    settled = true;
    fn();
  };
  return {
    subject: stored.subject,
    data: stored.data,
    headers: { ...stored.headers },
    seq,
    deliveryCount,
    redelivered: deliveryCount > 1,
    ack: once(() => settle(bus, stream, consumer, seq)),
    term: once(() => settle(bus, stream, consumer, seq)),
    nak: (delayMs?: number) =>
      once(() => {
        if (delayMs && delayMs > 0) arm(delayMs);
        else queueMicrotask(() => expire(bus, stream, consumer, seq));
      })(),
    working: () => {
      if (!settled) arm(consumer.spec.ackWaitMs);
    },
  };
}
