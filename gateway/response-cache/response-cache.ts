import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { sha256Hex } from '../../platform/text/canonical-json.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { Metrics } from '../../platform/observability/metrics.js';
import { GLOBAL_TAG, invalidationLagSeconds, keyParts, tenantsOfTags, type KeyMaterial } from './cache-policy.logic.js';
import { cacheServes, feedStatus, type FeedStatus, type FeedWatch } from './feed-watch.logic.js';
import { InvalidationLog } from './invalidation-log.logic.js';
import { MemoryStore } from './memory-store.logic.js';
import { RedisStore } from './redis-store.js';
import { TokenCheck } from './token-check.js';

export interface ResponseCacheSettings {
  /** L1: this process's budget. */
  memoryBytes: number;
  /** How long an entry lives at most, whatever invalidation does (the safety net). */
  ttlSeconds: number;
  /** Answers larger than this are not cached. */
  maxEntryBytes: number;
  /** L2: keys in the cache Redis at most (it holds at most slots × maxEntryBytes). */
  redisSlots: number;
  /** L1: bytes of one tenant's answers at most; its oldest go first. Default: memoryBytes / 4. */
  tenantMemoryBytes?: number;
  /** L2: keys one tenant's answers use at most (a window of redisSlots). Default: redisSlots / 16. */
  tenantRedisSlots?: number;
  /** How long the cache still serves after its event feed is lost (feed-watch.logic.ts). */
  feedGraceMs: number;
  /**
   * Sweep rounds of the cache Redis start at least this far apart (default 1,000 ms): a tenant
   * written 20 times a second costs each replica one sweep a second, not one per write, and an
   * erased person's bytes are still gone well within the 10 s bound.
   */
  sweepIntervalMs?: number;
}

/** Resolves after `ms` without keeping the process alive (a sweep waiting is no reason to stay up). */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

export type CacheResult = 'hit' | 'miss' | 'bypass' | 'coalesced';

/**
 * One miss being fetched on this replica: lookups of the same key meanwhile wait for it
 * (single-flight) instead of fetching too (200 concurrent identical misses made 200 catalog
 * fetches, issue #33).
 */
interface Flight {
  /** The fetched answer once it is stored as current; undefined when it was not (the waiters then look up on their own). */
  answer: Promise<string | undefined>;
  settle(body: string | undefined): void;
}

/** What a miss keeps until its answer is stored. */
export interface PendingEntry {
  keyHash: string;
  /** Whose answer it is: each tenant's share of L1 and L2 is bounded. */
  tenantId: string;
  /** Redis's clock when the read began; undefined when Redis could not be asked. */
  startMicros?: string;
  /** This process's invalidation count when the read began. */
  localSeq: number;
  /** This process's clock when the read began: the entry's TTL counts from here, not from the store. */
  startedAt: number;
  /** The flight this miss leads, settled by `store` or `abandon`. */
  flight?: Flight;
}

/** Tags whose Redis invalidation failed are retried before Redis is trusted again; beyond this, everything is dropped. */
const MAX_PENDING_TAGS = 1_000;
/** After a Redis failure, the cache does without it for this long (no 2 s command timeout per read). */
const REDIS_PAUSE_MS = 1_000;
/** Tags whose last invalidation is remembered for answers in flight (older ones: every answer then in flight is refused). */
const MAX_LOGGED_TAGS = 10_000;
/**
 * A lookup waits at most this long for a fetch of its key in flight, then looks up on its own: a
 * leader whose request never settles its flight (a bug) must not hold its waiters longer.
 */
const MAX_FLIGHT_WAIT_MS = 10_000;
/** Fine around the 250 ms staleness objective (issue #28), so the share within it is read off a bucket bound. */
export const INVALIDATION_LAG_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The gateway's response cache (docs/operations.md, "Response cache"): L1 in this process, L2 in
 * the cache Redis (redis-store.ts explains why it invalidates by tag token). A Redis failure is
 * never a failed read: the cache goes on with L1 (invalidated by this replica's mutations and the
 * catalog's events) and the subgraphs, and retries the invalidations Redis missed before it reads
 * from Redis again.
 */
export class ResponseCache {
  private readonly memory: MemoryStore;
  private readonly redis?: RedisStore;
  private readonly tokenCheck?: TokenCheck;
  private readonly requests?: ReturnType<Metrics['counter']>;
  private readonly invalidations?: ReturnType<Metrics['counter']>;
  private readonly redisErrors?: ReturnType<Metrics['counter']>;
  private readonly swept?: ReturnType<Metrics['counter']>;
  private readonly sweepRounds?: ReturnType<Metrics['counter']>;
  private readonly invalidationLag?: ReturnType<Metrics['histogram']>;
  private readonly commitLag?: ReturnType<Metrics['histogram']>;
  private readonly feedUp?: ReturnType<Metrics['gauge']>;
  private localSeq = 0;
  /** The catalog event feed's state; a cache no feed was attached to counts as following. */
  private readonly feed: FeedWatch = {};
  /** What was invalidated while answers were being fetched. */
  private readonly invalidated = new InvalidationLog(MAX_LOGGED_TAGS);
  private redisPausedUntil = 0;
  /** Tags Redis has not been told of yet, with the local invalidation count when they were added. */
  private readonly unsentTags = new Map<string, number>();
  /** Misses being fetched on this replica, by key hash. */
  private readonly flights = new Map<string, Flight>();
  /** Tenants whose Redis entries wait to be swept after an invalidation ('all': every tenant's). */
  private sweepPending: 'all' | Set<string> = new Set();
  private sweeping = false;
  /** When this replica's last sweep round started: rounds start at least sweepIntervalMs apart. */
  private lastSweepAt = Number.NEGATIVE_INFINITY;

  constructor(
    readonly settings: ResponseCacheSettings,
    deps: { redis?: Redis; metrics?: Metrics; logger: Logger; now?: () => number },
  ) {
    this.logger = deps.logger;
    this.now = deps.now ?? Date.now;
    this.memory = new MemoryStore(settings.memoryBytes, settings.tenantMemoryBytes ?? Math.floor(settings.memoryBytes / 4));
    if (deps.redis) {
      this.redis = new RedisStore(
        deps.redis,
        {
          ttlSeconds: settings.ttlSeconds,
          slots: settings.redisSlots,
          tenantSlots: settings.tenantRedisSlots ?? Math.max(1, Math.floor(settings.redisSlots / 16)),
        },
        () => randomBytes(9).toString('base64url'),
      );
      const store = this.redis;
      this.tokenCheck = new TokenCheck((tags) => store.tokens(tags));
    }
    this.requests = deps.metrics?.counter({
      name: 'response_cache_requests_total',
      help: 'Operations the response cache saw: hit (served from it), coalesced (served the answer of the same miss fetched meanwhile on this replica), miss (cacheable, fetched), bypass (not cacheable).',
      labelNames: ['result'],
    });
    this.invalidations = deps.metrics?.counter({
      name: 'response_cache_invalidations_total',
      help: 'Invalidations of the response cache, by what caused them (mutation through this gateway, catalog event).',
      labelNames: ['source'],
    });
    this.redisErrors = deps.metrics?.counter({
      name: 'response_cache_redis_errors_total',
      help: 'Response cache operations on the cache Redis that failed (the cache went on without Redis).',
      labelNames: [],
    });
    this.swept = deps.metrics?.counter({
      name: 'response_cache_redis_swept_total',
      help: 'Invalidated entries whose bytes this replica deleted from the cache Redis (they could no longer be served).',
      labelNames: [],
    });
    this.sweepRounds = deps.metrics?.counter({
      name: 'response_cache_redis_sweeps_total',
      help: 'Sweep rounds this replica ran on the cache Redis (at most one a RESPONSE_CACHE_SWEEP_INTERVAL_MS).',
      labelNames: [],
    });
    this.invalidationLag = deps.metrics?.histogram({
      name: 'response_cache_invalidation_lag_seconds',
      help: "Seconds from a catalog event's occurredAt (written with its outbox row) until this replica had dropped what it changed (L1, and the cache Redis unless it is down).",
      labelNames: [],
      buckets: INVALIDATION_LAG_BUCKETS,
    });
    this.commitLag = deps.metrics?.histogram({
      name: 'response_cache_invalidation_commit_lag_seconds',
      help: "Seconds from the commit of a catalog event's transaction (stamped by the outbox relay when the database tracks commit times) until this replica had dropped what it changed: the staleness objective's own measure. Empty when the database does not track commit times.",
      labelNames: [],
      buckets: INVALIDATION_LAG_BUCKETS,
    });
    this.feedUp = deps.metrics?.gauge({
      name: 'response_cache_feed_up',
      help: "1 while this gateway follows the catalog's events; 0 once the feed is lost (past RESPONSE_CACHE_FEED_GRACE_MS the cache stops serving).",
      labelNames: [],
    });
    this.feedUp?.set(1);
  }

  private readonly logger: Logger;
  private readonly now: () => number;

  keyHash(material: KeyMaterial): string {
    return sha256Hex(keyParts(material).join('\u0000'));
  }

  count(result: CacheResult): void {
    this.requests?.inc({ result });
  }

  /**
   * A stored answer (the response body as JSON text), or what storing the fetched one needs. While
   * the same key is being fetched on this replica, waits for that answer instead (single-flight); it
   * is handed on only once stored as current, so a waiter never gets an answer an invalidation
   * during the fetch concerned.
   */
  async lookup(material: KeyMaterial): Promise<{ body: string } | { pending: PendingEntry }> {
    const keyHash = this.keyHash(material);
    if (!this.serving()) {
      // The event feed is lost past its grace (feed-watch.logic.ts): fetched, never stored, no flight.
      this.count('bypass');
      return { pending: { keyHash, tenantId: material.tenantId, localSeq: this.localSeq, startedAt: this.now() } };
    }
    const inFlight = this.flights.get(keyHash);
    if (inFlight) {
      const body = await inFlight.answer;
      if (body !== undefined) {
        this.count('coalesced');
        return { body };
      }
    }
    // Taken before the first await, so a burst of one key finds it from its second lookup on.
    const flight = this.flights.has(keyHash) ? undefined : this.startFlight(keyHash);
    const found = await this.lookupOnce(keyHash, material.tenantId);
    if ('pending' in found && flight) return { pending: { ...found.pending, flight } };
    flight?.settle(undefined);
    return found;
  }

  /** The miss that was looked up was not stored (an error, a refused store): its waiters look up on their own. */
  abandon(pending: PendingEntry): void {
    pending.flight?.settle(undefined);
  }

  private startFlight(keyHash: string): Flight {
    let resolve!: (body: string | undefined) => void;
    const answer = new Promise<string | undefined>((r) => (resolve = r));
    const timer = setTimeout(() => flight.settle(undefined), MAX_FLIGHT_WAIT_MS);
    timer.unref();
    const flight: Flight = {
      answer,
      settle: (body) => {
        clearTimeout(timer);
        if (this.flights.get(keyHash) === flight) this.flights.delete(keyHash);
        resolve(body);
      },
    };
    this.flights.set(keyHash, flight);
    return flight;
  }

  private async lookupOnce(keyHash: string, tenantId: string): Promise<{ body: string } | { pending: PendingEntry }> {
    const localSeq = this.localSeq;
    const startedAt = this.now();
    const local = this.memory.get(keyHash, startedAt);
    const redis = await this.usableRedis();
    if (local && !redis) {
      this.count('hit');
      return { body: local.body };
    }
    if (!redis) {
      this.count('miss');
      return { pending: { keyHash, tenantId, localSeq, startedAt } };
    }
    try {
      // Another replica may have taken a write since this entry was stored here: Redis's tag
      // tokens say whether it is still current (one round trip; the body is not fetched).
      if (local?.tokens && (await this.tokenCheck?.check(local.tags, local.tokens))) {
        this.count('hit');
        return { body: local.body };
      }
      if (local) this.memory.delete(keyHash);
      const read = await redis.read(keyHash, tenantId);
      if (read.hit) {
        // The time the entry has left in Redis, never a fresh TTL: it counts from the fetch on every replica.
        const { remainingMs, ...entry } = read.hit;
        this.memory.set(keyHash, {
          ...entry,
          owner: tenantId,
          expiresAt: this.now() + Math.min(remainingMs, this.settings.ttlSeconds * 1000),
        });
        this.count('hit');
        return { body: read.hit.body };
      }
      this.count('miss');
      return { pending: { keyHash, tenantId, localSeq, startedAt, startMicros: read.startMicros } };
    } catch (error) {
      this.redisFailed(error);
      if (local) {
        this.count('hit');
        return { body: local.body };
      }
      this.count('miss');
      return { pending: { keyHash, tenantId, localSeq, startedAt } };
    }
  }

  /**
   * Stores a fetched answer unless one of its tags was invalidated while it was fetched (an
   * invalidation of other tags meanwhile does not concern it: under a steady flow of events some
   * invalidation overlaps nearly every fetch).
   */
  async store(pending: PendingEntry, body: string, tags: readonly string[]): Promise<void> {
    let current = false;
    try {
      current = await this.storeOnce(pending, body, tags);
    } finally {
      // Waiters get the answer only when it was stored as current (see lookup).
      pending.flight?.settle(current ? body : undefined);
    }
  }

  /** True when the answer was stored as current (in L1, and in Redis when it is used). */
  private async storeOnce(pending: PendingEntry, body: string, tags: readonly string[]): Promise<boolean> {
    if (body.length > this.settings.maxEntryBytes || !this.serving()) return false;
    if (this.invalidated.changedSince(tags, pending.localSeq)) return false;
    const expiresAt = pending.startedAt + this.settings.ttlSeconds * 1000;
    if (expiresAt <= this.now()) return false;
    const redis = pending.startMicros === undefined ? undefined : await this.usableRedis();
    if (!redis || pending.startMicros === undefined) {
      this.memory.set(pending.keyHash, { body, tags, owner: pending.tenantId, expiresAt });
      return !this.invalidated.changedSince(tags, pending.localSeq);
    }
    try {
      const tokens = await redis.store(pending.keyHash, pending.tenantId, pending.startMicros, body, tags);
      if (!tokens || this.invalidated.changedSince(tags, pending.localSeq)) return false;
      this.memory.set(pending.keyHash, { body, tags, tokens, owner: pending.tenantId, expiresAt });
      return true;
    } catch (error) {
      this.redisFailed(error);
      return false;
    }
  }

  /**
   * Drops every entry that depends on one of `tags`, here and in Redis. Resolves once both are done
   * (or Redis failed, and the tags wait to be sent before Redis is read again). For an event, the
   * time from its `occurredAt` to then is recorded in response_cache_invalidation_lag_seconds, and
   * from its commit, when the relay stamped it, in response_cache_invalidation_commit_lag_seconds.
   */
  async invalidate(
    tags: readonly string[],
    source: 'mutation' | 'event',
    event: { occurredAt?: unknown; committedAtMs?: number } = {},
  ): Promise<void> {
    this.localSeq++;
    this.memory.invalidate(tags);
    this.invalidated.record(tags, this.localSeq);
    this.invalidations?.inc({ source });
    if (this.redis) {
      // Past the bound, the dropped tags are replaced by the one every entry depends on.
      const overflow = this.unsentTags.size + tags.length > MAX_PENDING_TAGS;
      if (overflow) this.unsentTags.clear();
      const sent = overflow ? [GLOBAL_TAG] : tags;
      for (const tag of sent) this.unsentTags.set(tag, this.localSeq);
      await this.usableRedis();
      this.sweepLater(tenantsOfTags(sent));
    }
    if (source === 'event') {
      const lag = invalidationLagSeconds(event.occurredAt, this.now());
      if (lag !== undefined) this.invalidationLag?.observe(lag);
      if (event.committedAtMs !== undefined) this.commitLag?.observe(Math.max(0, this.now() - event.committedAtMs) / 1000);
    }
  }

  /**
   * Deletes the dropped entries' bytes from Redis (redis-store.ts, `sweep`), after the invalidation
   * and off its path: an invalidated entry is never served, but until its TTL it would still be a
   * copy of what it held (an erased person's id, issue #33). Tenants invalidated while a sweep runs
   * are swept by the next round (at most one a sweepIntervalMs), so a burst of events costs one sweep
   * per tenant, not one per event.
   * Every replica that hears an event sweeps (idempotent), so one replica dying does not keep the
   * bytes. After a Redis failure the tenants wait for the next invalidation's sweep.
   */
  private sweepLater(tenants: 'all' | ReadonlySet<string>): void {
    this.addPendingSweep(tenants);
    if (this.sweeping) return;
    this.sweeping = true;
    void this.sweepPendingTenants();
  }

  private async sweepPendingTenants(): Promise<void> {
    try {
      while (this.sweepPending === 'all' || this.sweepPending.size > 0) {
        // Tenants invalidated meanwhile wait for the next round, which sweeps them all at once.
        const wait = this.lastSweepAt + (this.settings.sweepIntervalMs ?? 1_000) - Date.now();
        if (wait > 0) await pause(wait);
        this.lastSweepAt = Date.now();
        this.sweepRounds?.inc();
        const tenants = this.sweepPending;
        this.sweepPending = new Set();
        // Sends the invalidations Redis still misses first: a sweep before them would find the entries current.
        const redis = await this.usableRedis();
        try {
          if (!redis) throw new Error('the cache Redis is paused after a failure');
          this.swept?.inc(await redis.sweep(tenants));
        } catch (error) {
          if (redis) this.redisFailed(error);
          this.addPendingSweep(tenants);
          return;
        }
      }
    } finally {
      this.sweeping = false;
    }
  }

  private addPendingSweep(tenants: 'all' | ReadonlySet<string>): void {
    if (tenants === 'all' || this.sweepPending === 'all') this.sweepPending = 'all';
    else for (const tenantId of tenants) this.sweepPending.add(tenantId);
  }

  /** The catalog event feed cannot be heard (disconnected, or a half-open link). */
  feedLost(): void {
    if (this.feed.lostSince !== undefined) return;
    this.feed.lostSince = this.now();
    this.feedUp?.set(0);
    this.logger.warn(
      { graceMs: this.settings.feedGraceMs },
      'response cache: the catalog event feed is lost; cached answers stop being served after the grace',
    );
  }

  /**
   * The feed is heard again, and events may have been missed meanwhile (core NATS does not replay):
   * L1 is emptied and every entry in the shared Redis dropped (one tag token), since a missed event
   * may concern any of them. Also called on a reconnect the probe did not see coming.
   */
  async feedBack(): Promise<void> {
    const wasLost = this.feed.lostSince !== undefined;
    this.feed.lostSince = undefined;
    this.feedUp?.set(1);
    this.clearLocal();
    if (wasLost) this.logger.info('response cache: the catalog event feed is back; the cache starts empty');
    await this.invalidate([GLOBAL_TAG], 'event');
  }

  feedStatus(): FeedStatus {
    return feedStatus(this.feed, this.now(), this.settings.feedGraceMs);
  }

  private serving(): boolean {
    return cacheServes(this.feedStatus());
  }

  /** Everything dropped here (e.g. after the event feed was lost for a while). */
  clearLocal(): void {
    this.localSeq++;
    this.memory.clear();
    this.invalidated.clear(this.localSeq);
  }

  memoryBytes(): number {
    return this.memory.bytes();
  }

  /**
   * Redis, unless it failed a moment ago or still misses invalidations this replica owes it: a
   * read from Redis before they are sent could return an answer they were meant to drop.
   */
  private async usableRedis(): Promise<RedisStore | undefined> {
    if (!this.redis || this.now() < this.redisPausedUntil) return undefined;
    if (this.unsentTags.size > 0) {
      const sent = new Map(this.unsentTags);
      try {
        await this.redis.invalidate([...sent.keys()]);
        // A tag invalidated again while this was in flight is sent again next time.
        for (const [tag, seq] of sent) if (this.unsentTags.get(tag) === seq) this.unsentTags.delete(tag);
      } catch (error) {
        this.redisFailed(error);
        return undefined;
      }
    }
    return this.redis;
  }

  private redisFailed(error: unknown): void {
    if (this.now() >= this.redisPausedUntil) {
      this.logger.warn({ err: error }, 'response cache: the cache Redis failed; going on without it for a moment');
    }
    this.redisErrors?.inc();
    this.redisPausedUntil = this.now() + REDIS_PAUSE_MS;
  }
}
