import { connect, headers as natsHeaders, nanos, TimeoutError, type NatsConnection } from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  StorageType,
  jetstream,
  jetstreamManager,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { natsServers } from '../../platform/config/config.js';
import { NATS_LIVENESS } from '../../platform/config/link-liveness.js';
import type { Logger } from '../../platform/observability/logger.js';
import {
  collectPages,
  DEFAULT_DUPLICATE_WINDOW_MS,
  type BusMessage,
  type DurableConsumerSpec,
  type EventBus,
  type MaxDeliveriesAdvisory,
  type MessageBus,
  type StreamStore,
  type MessageHandler,
  type StreamSpec,
  type Subscription,
} from './event-bus.js';
import { streamChanges } from './stream-config.logic.js';
import { readPages, toHeaders } from './jetstream-read.js';

export interface JetStreamBusOptions {
  logger: Logger;
  /** Messages fetched ahead of the one being handled; their ack wait runs while they wait. */
  prefetch?: number;
  /** How long one pull request stays open on the server. */
  pullExpiresMs?: number;
  /** Wait after a consume loop fails (connection lost, consumer deleted) before pulling again. */
  retryDelayMs?: number;
  /** How a follow (`follow`) notices a lost or half-open link; DEFAULT_LINK_PROBE otherwise. */
  linkProbe?: LinkProbeSettings;
}

const MAX_DELIVERIES_ADVISORY = '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.>';

const isApiError = (error: unknown, code: number) => error instanceof JetStreamApiError && error.code === code;

/**
 * Connects to NATS and returns the JetStream bus; `close()` drains the connection it opened.
 * `natsUrl` is one server or a comma-separated list: the first reachable one is used, and the
 * client learns the rest of the cluster from it.
 */
export async function connectJetStreamBus(natsUrl: string, options: JetStreamBusOptions): Promise<EventBus> {
  const nc = await connect({
    servers: natsServers(natsUrl),
    name: 'catalog-events',
    maxReconnectAttempts: -1,
    // A frozen or partitioned server keeps the socket open: only unanswered pings reveal it
    // (platform/config/link-liveness.ts), and the client then moves to another server.
    pingInterval: NATS_LIVENESS.pingIntervalMs,
    maxPingOut: NATS_LIVENESS.maxPingOut,
    reconnectTimeWait: NATS_LIVENESS.reconnectTimeWaitMs,
    timeout: NATS_LIVENESS.requestTimeoutMs,
    // Without this the client builds an Error (a stack trace) for every publish and request in
    // case it later times out: 5 % of the event worker's CPU at 2,000 events/s (bench/README.md,
    // events). A timeout still rejects, with the client's own stack.
    noAsyncTraces: true,
  });
  try {
    return await createJetStreamBus(nc, { ...options, ownsConnection: true });
  } catch (error) {
    // Connected but JetStream did not answer (a leader election): the caller may try again.
    await nc.close().catch(() => undefined);
    throw error;
  }
}

export async function createJetStreamBus(
  nc: NatsConnection,
  options: JetStreamBusOptions & { ownsConnection?: boolean },
): Promise<EventBus> {
  const logger = options.logger;
  const jsOptions = { timeout: NATS_LIVENESS.requestTimeoutMs };
  const reconnects = new Reconnects(nc, logger);
  const jsm: JetStreamManager = await jetstreamManager(nc, jsOptions);
  const js: JetStreamClient = jetstream(nc, jsOptions);
  const [major = 0, minor = 0] = (nc.info?.version ?? '0.0').split('.').map(Number);
  const pulls: PullContext = {
    js,
    jsm,
    logger,
    prefetch: options.prefetch ?? 10,
    pullExpiresMs: options.pullExpiresMs ?? NATS_LIVENESS.pullExpiresMs,
    retryDelayMs: options.retryDelayMs ?? 1_000,
    termTakesReason: major > 2 || (major === 2 && minor >= 11),
    subscriptions: new Set<Subscription>(),
    reconnects,
  };
  const advisories = new MaxDeliveriesAdvisories(nc, logger);
  const link = new FollowedLink(nc, options.linkProbe ?? DEFAULT_LINK_PROBE);
  const messaging: MessageBus = {
    kind: 'jetstream',
    async publish(subject, data, opts = {}) {
      const h = natsHeaders();
      for (const [key, value] of Object.entries(opts.headers ?? {})) {
        if (key.toLowerCase() !== 'nats-msg-id') h.set(key, value);
      }
      const ack = await js.publish(subject, data, { msgID: opts.msgId, headers: h });
      return { stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate };
    },
    consume: (spec, handler) => consume(pulls, spec, handler),
    onMaxDeliveries: (listener) => advisories.listen(listener),
    async follow(filters, follower) {
      // A JetStream publish reaches core subscribers of its subject like any other message: every
      // follower hears every event, and nothing is left on the server when it goes away.
      const subscriptions = filters.map((filter) =>
        nc.subscribe(filter, {
          callback: (error, m) => {
            if (error) logger.warn({ err: error, filter }, 'bus: a followed subscription failed');
            else follower.onMessage(m.subject, m.data, toHeaders(m.headers));
          },
        }),
      );
      const stopGaps = link.listen({ onLost: () => follower.onLost?.(), onBack: () => follower.onGap() });
      // Subscribed once the server has seen the subscriptions: what is published after this resolves is heard.
      await nc.flush();
      return async () => {
        stopGaps();
        for (const subscription of subscriptions) subscription.unsubscribe();
      };
    },
    async close() {
      await Promise.all([...pulls.subscriptions].map((s) => s.stop()));
      advisories.close();
      if (options.ownsConnection) await nc.drain();
    },
  };
  return { ...messaging, ...jetStreamStore(jsm, js) };
}

/** The stream administration and reads of a JetStream server (the StreamStore port). */
function jetStreamStore(jsm: JetStreamManager, js: JetStreamClient): StreamStore {
  const store: StreamStore = {
    async ensureStream(spec: StreamSpec) {
      const existing = await store.streamConfig(spec.name);
      if (!existing) {
        await jsm.streams.add({
          name: spec.name,
          subjects: spec.subjects,
          max_age: nanos(spec.maxAgeMs),
          duplicate_window: nanos(spec.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS),
          num_replicas: spec.replicas ?? 1,
          storage: spec.storage === 'memory' ? StorageType.Memory : StorageType.File,
        });
        return 'created';
      }
      const changes = streamChanges(existing, { subjects: spec.subjects, replicas: spec.replicas ?? 1 });
      if (!changes) return 'unchanged';
      // The client merges these into the stream's current configuration.
      await jsm.streams.update(spec.name, { subjects: [...changes.subjects], num_replicas: changes.replicas });
      return 'updated';
    },
    async streamConfig(name) {
      try {
        const { config } = await jsm.streams.info(name);
        return { subjects: config.subjects ?? [], replicas: config.num_replicas, maxAgeMs: config.max_age / 1_000_000 };
      } catch (error) {
        if (isApiError(error, JetStreamApiCodes.StreamNotFound)) return undefined;
        throw error;
      }
    },
    async deleteStream(name) {
      try {
        await jsm.streams.delete(name);
      } catch (error) {
        if (!isApiError(error, JetStreamApiCodes.StreamNotFound)) throw error;
      }
    },
    async streamState(name) {
      const { state } = await jsm.streams.info(name);
      return {
        messages: state.messages,
        firstSeq: state.first_seq,
        lastSeq: state.last_seq,
        // An empty stream reports the zero time (0001-01-01) as its first.
        ...(state.messages > 0 ? { firstTime: new Date(state.first_ts) } : {}),
      };
    },
    async deleteConsumer(stream, durable) {
      try {
        await jsm.consumers.delete(stream, durable);
      } catch (error) {
        if (!isApiError(error, JetStreamApiCodes.ConsumerNotFound) && !isApiError(error, JetStreamApiCodes.StreamNotFound))
          throw error;
      }
    },
    async consumerAckFloor(stream, durable) {
      return (await jsm.consumers.info(stream, durable)).ack_floor.stream_seq;
    },
    readPages: (stream, opts = {}) => readPages(jsm, js, stream, opts),
    readStream: (stream, opts = {}) => collectPages(readPages(jsm, js, stream, opts)),
    getMessage: (stream, seq) => getMessage(jsm, stream, seq),
    deleteMessage: (stream, seq) => deleteMessage(jsm, stream, seq),
  };
  return store;
}

async function getMessage(jsm: JetStreamManager, stream: string, seq: number) {
  try {
    const m = await jsm.streams.getMessage(stream, { seq });
    if (!m) return undefined;
    return { stream, seq: m.seq, subject: m.subject, data: m.data, headers: toHeaders(m.header), time: m.time };
  } catch (error) {
    if (isApiError(error, JetStreamApiCodes.NoMessageFound)) return undefined;
    throw error;
  }
}

async function deleteMessage(jsm: JetStreamManager, stream: string, seq: number): Promise<boolean> {
  try {
    return await jsm.streams.deleteMessage(stream, seq, false);
  } catch (error) {
    // A missing sequence is answered "delete failed … not found" (10043) by a memory stream and
    // "no message found" (10057) by a file stream, whose codes name no such case.
    if (error instanceof JetStreamApiError && /not found|no message found/i.test(error.message)) return false;
    throw error;
  }
}

/** What the pull loops of one bus share. */
interface PullContext {
  js: JetStreamClient;
  jsm: JetStreamManager;
  logger: JetStreamBusOptions['logger'];
  prefetch: number;
  pullExpiresMs: number;
  retryDelayMs: number;
  /** Before 2.11 the server does not read `+TERM <reason>` as a term and redelivers. */
  termTakesReason: boolean;
  subscriptions: Set<Subscription>;
  reconnects: Reconnects;
}

/**
 * upsertConsumer, tried again when the API does not answer in time: a consumer made on a
 * replicated stream while a node is down may wait out a leader election (seconds) before it
 * answers, and creating it again is harmless (the same durable, the same settings).
 */
async function ensureConsumer(jsm: JetStreamManager, spec: DurableConsumerSpec, attempts = 3): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await upsertConsumer(jsm, spec);
    } catch (error) {
      if (!(error instanceof TimeoutError) || attempt >= attempts) throw error;
    }
  }
}

/** Creates the durable consumer, or updates its delivery settings; its filter never changes. */
async function upsertConsumer(jsm: JetStreamManager, spec: DurableConsumerSpec): Promise<void> {
  const settings = {
    ack_wait: nanos(spec.ackWaitMs),
    max_deliver: spec.maxDeliver,
    max_ack_pending: spec.maxAckPending ?? 1000,
  };
  try {
    const info = await jsm.consumers.info(spec.stream, spec.durable);
    if (info.config.filter_subject !== spec.filterSubject) {
      throw new Error(
        `consumer ${spec.durable} exists with filter ${info.config.filter_subject}; delete it to change the filter`,
      );
    }
    await jsm.consumers.update(spec.stream, spec.durable, settings);
  } catch (error) {
    if (!isApiError(error, JetStreamApiCodes.ConsumerNotFound)) throw error;
    await jsm.consumers.add(spec.stream, {
      durable_name: spec.durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: spec.filterSubject,
      ...settings,
    });
  }
}

function wrap(m: JsMsg, termTakesReason: boolean): BusMessage {
  return {
    subject: m.subject,
    data: m.data,
    headers: toHeaders(m.headers),
    seq: m.seq,
    deliveryCount: m.info.deliveryCount,
    redelivered: m.redelivered,
    ack: () => m.ack(),
    nak: (delayMs) => m.nak(delayMs && delayMs > 0 ? delayMs : undefined),
    // Before 2.11 the server does not read `+TERM <reason>` as a term and redelivers.
    term: (reason) => (termTakesReason ? m.term(reason) : m.term()),
    working: () => m.working(),
  };
}

/**
 * A durable consumer's pull loop: at most `concurrency` handlers at once, the next message taken
 * only when a slot is free, and the pull started again when it ends or fails.
 */
async function consume(pulls: PullContext, spec: DurableConsumerSpec, handler: MessageHandler): Promise<Subscription> {
  const { js, logger, prefetch, pullExpiresMs, retryDelayMs, subscriptions } = pulls;
  await ensureConsumer(pulls.jsm, spec);
  const consumer = await js.consumers.get(spec.stream, spec.durable);
  const concurrency = Math.max(1, spec.concurrency ?? 1);
  const running = new Set<Promise<void>>();
  let stopping = false;
  let messages: ConsumerMessages | undefined;
  let wakeRetry: (() => void) | undefined;
  // After a reconnect (a stale server left) the pull is made again at once on the new server,
  // rather than when the old one's pull would have expired or two heartbeats gone missing.
  const stopRepull = pulls.reconnects.listen(() => void messages?.close());
  const loop = (async () => {
    while (!stopping) {
      try {
        messages = await consumer.consume({
          max_messages: Math.max(prefetch, 2 * concurrency),
          expires: pullExpiresMs,
          // Two missed heartbeats (a frozen server) end the pull and it is made again.
          idle_heartbeat: Math.min(NATS_LIVENESS.consumerIdleHeartbeatMs, pullExpiresMs / 2),
        });
        if (stopping) await messages.close();
        for await (const m of messages) {
          // Prefetched messages go straight back so another replica (or the restarted
          // consumer) gets them now instead of after the ack wait.
          if (stopping) {
            m.nak();
            continue;
          }
          const handled: Promise<void> = handler(wrap(m, pulls.termTakesReason))
            .catch((error: unknown) => {
              logger.error({ err: error, subject: m.subject }, 'event handler threw; the ack wait will redeliver');
            })
            .finally(() => running.delete(handled));
          running.add(handled);
          // The next message is taken only when a handler slot is free.
          if (running.size >= concurrency) await Promise.race(running);
        }
        await Promise.all(running);
        if (!stopping) logger.warn({ stream: spec.stream, durable: spec.durable }, 'consume loop ended; pulling again');
      } catch (error) {
        if (stopping) break;
        logger.warn({ err: error, stream: spec.stream, durable: spec.durable }, 'consume loop failed; retrying');
      }
      if (!stopping) {
        await new Promise<void>((resolve) => {
          wakeRetry = resolve;
          setTimeout(resolve, retryDelayMs).unref();
        });
      }
    }
  })();
  const subscription: Subscription = {
    stop: async () => {
      stopping = true;
      stopRepull();
      wakeRetry?.();
      await messages?.close();
      await loop;
      // Handlers already running finish (ack or nak) before stop resolves.
      await Promise.all(running);
      subscriptions.delete(subscription);
    },
  };
  subscriptions.add(subscription);
  return subscription;
}

/** How often a followed connection is asked for a PONG, and how long the answer may take. */
export interface LinkProbeSettings {
  intervalMs: number;
  timeoutMs: number;
}

/** Detects a half-open link within about interval + timeout, whatever the client's own ping settings. */
export const DEFAULT_LINK_PROBE: LinkProbeSettings = { intervalMs: 1_000, timeoutMs: 2_000 };

interface LinkListener {
  onLost(): void;
  onBack(): void;
}

/**
 * The connection's health as its followers need it, fanned out to them: lost when the client says
 * it disconnected or a PING goes unanswered (a frozen or partitioned server keeps the socket open),
 * back (a gap: core messages published meanwhile are not replayed) when it reconnects or answers
 * again. Watched from the first listener until the last one leaves.
 */
class FollowedLink {
  private readonly listeners = new Set<LinkListener>();
  private readingStatus = false;
  private probe: NodeJS.Timeout | undefined;
  private probing = false;
  private lost = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly settings: LinkProbeSettings,
  ) {}

  listen(listener: LinkListener): () => void {
    this.listeners.add(listener);
    this.readStatus();
    this.probe ??= setInterval(() => void this.probeOnce(), this.settings.intervalMs);
    this.probe.unref();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.probe) {
        clearInterval(this.probe);
        this.probe = undefined;
      }
    };
  }

  private readStatus(): void {
    if (this.readingStatus) return;
    this.readingStatus = true;
    void (async () => {
      for await (const status of this.nc.status()) {
        if (status.type === 'disconnect') this.markLost();
        // Every reconnect is a gap, even one the probe did not see coming.
        if (status.type === 'reconnect') this.markBack(true);
      }
    })();
  }

  private async probeOnce(): Promise<void> {
    if (this.probing || this.nc.isClosed()) return;
    this.probing = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('no PONG')), this.settings.timeoutMs);
      });
      await Promise.race([this.nc.flush(), timeout]);
      this.markBack(false);
    } catch {
      this.markLost();
    } finally {
      clearTimeout(timer);
      this.probing = false;
    }
  }

  private markLost(): void {
    if (this.lost) return;
    this.lost = true;
    for (const l of this.listeners) l.onLost();
  }

  private markBack(always: boolean): void {
    if (!this.lost && !always) return;
    this.lost = false;
    for (const l of this.listeners) l.onBack();
  }
}

/**
 * The connection's reconnects, fanned out to the pull consumers (each pulls again at once), and the
 * link's changes logged, so an operator sees a stale server left.
 */
class Reconnects {
  private readonly listeners = new Set<() => void>();

  constructor(nc: NatsConnection, logger: Logger) {
    // Read from the start: the link's changes are logged, so an operator sees a stale server left.
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === 'staleConnection') logger.warn('nats: the server stopped answering pings; reconnecting');
        else if (status.type === 'disconnect') logger.warn({ server: status.server }, 'nats: disconnected');
        else if (status.type === 'reconnect') {
          logger.info({ server: status.server }, 'nats: reconnected');
          for (const l of this.listeners) l();
        }
      }
    })();
  }

  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}

/** One subscription to the MAX_DELIVERIES advisories, made on first listen, fanned out to the listeners. */
class MaxDeliveriesAdvisories {
  private readonly listeners = new Set<(advisory: MaxDeliveriesAdvisory) => void>();
  private subscription: ReturnType<NatsConnection['subscribe']> | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly logger: JetStreamBusOptions['logger'],
  ) {}

  listen(listener: (advisory: MaxDeliveriesAdvisory) => void): () => void {
    this.listeners.add(listener);
    this.subscription ??= this.nc.subscribe(MAX_DELIVERIES_ADVISORY, {
      callback: (error, msg) => {
        if (error) return;
        try {
          const body = msg.json<{ stream: string; consumer: string; stream_seq: number; deliveries: number }>();
          const advisory = {
            stream: body.stream,
            consumer: body.consumer,
            streamSeq: body.stream_seq,
            deliveries: body.deliveries,
          };
          for (const l of this.listeners) l(advisory);
        } catch (parseError) {
          this.logger.warn({ err: parseError }, 'unreadable MAX_DELIVERIES advisory');
        }
      },
    });
    return () => {
      this.listeners.delete(listener);
    };
  }

  close(): void {
    this.subscription?.unsubscribe();
  }
}
