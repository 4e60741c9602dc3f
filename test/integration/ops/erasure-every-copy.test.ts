import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayFromArchive } from '../../../events/archive/outbox-archive.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { subjectFor, type EventEnvelope } from '../../../events/envelope.js';
import { catalogSubjects } from '../../../events/streams.js';
import type { RunningGateway } from '../../../gateway/gateway.js';
import { followCatalogEvents, type CatalogEventFollower } from '../../../gateway/response-cache/catalog-events.js';
import { ResponseCache } from '../../../gateway/response-cache/response-cache.js';
import { mintToken } from '../../../platform/auth/dev-keys.js';
import { ERASED_USER_ID, newId, newUlid } from '../../../platform/ids.js';
import { createLogger } from '../../../platform/observability/logger.js';
import { createMetrics, type Metrics } from '../../../platform/observability/metrics.js';
import { connectRedis } from '../../../platform/redis.js';
import { catalogEventFeed } from '../../../processes/parts.js';
import type { System } from '../../../processes/system.js';
import { startFixtureGateway } from '../../support/catalog-fixture.js';
import { rowsHolding } from '../../support/database-scan.js';
import { eventually } from '../../support/eventually.js';
import { startTestSystem, type TestSystem } from '../../support/in-process-system.js';
import { builtPayload, consumedEnvelope, CONSUMED_TRACEPARENT, gdprPayload } from '../catalog/harness.js';

/**
 * Erasure reaches every copy within 10 s of the GDPR event (issue #33, item 2). A one-process
 * system (catalog, event worker with the outbox relay, in-process bus) behind two gateway replicas
 * with their own response caches (L1), sharing the cache Redis of REDIS_URL as L2 when it is set,
 * each following the catalog's events as a gateway process does. Two subjects are erased: the
 * author of one course, and the publisher of another course's version who is not among its
 * authors (that erasure emitted no event before: both replicas served the id until the TTL).
 *
 * Before the erasure every read is shown to be a cache hit on both replicas and to hold the ids,
 * so a scan that finds nothing afterwards found nothing because the copies were changed. Then,
 * within one deadline of 10 s from the requests, nothing may hold either id: any table of the
 * database (the Idempotency-Key records included), either replica's L1, any L2 entry (live or invalidated: its bytes are a copy too), a message the bus carried after the requests,
 * what a replay of the archive sends, GraphQL and REST answers of both replicas; and a REST
 * `If-None-Match` with the course's old ETag gets the new course (200), not a 304.
 */
const TENANT = newId('tenant');
const AUTHOR = newId('user');
const PUBLISHER = newId('user');
const AUTHOR_NAME = 'Erin Erased';
const KEPT = { userId: newId('user'), role: 'author', displayName: 'Bob Kept' };
const ERASURE_DEADLINE_MS = 10_000;
const redisUrl = process.env.REDIS_URL;
const silent = createLogger({ level: 'silent' });

const COURSE =
  'query One($id: ID!) { course(courseId: $id) { courseId etag authors { userId displayName } versions { courseVersionId publishedBy } } }';
const VERSION = 'query V($id: ID!) { courseVersion(courseVersionId: $id) { courseVersionId courseId publishedBy } }';
const LIST =
  '{ courses(first: 100) { edges { node { courseId authors { userId } versions { courseVersionId publishedBy } } } } }';
/**
 * Cached before the erasure and never read after it: a read of the same key after the erasure
 * would store the new answer over the old entry's slot, so only an entry nobody asks for again
 * shows whether the dropped bytes are deleted.
 */
const UNREAD_AFTER = 'query Unread($id: ID!) { courseVersion(courseVersionId: $id) { courseVersionId publishedBy } }';

interface Replica {
  name: string;
  gateway: RunningGateway;
  cache: ResponseCache;
  metrics: Metrics;
  follower: CatalogEventFollower;
}

let running: TestSystem;
let system: System;
let cacheRedis: Redis | undefined;
let token: string;
const replicas: Replica[] = [];

async function startReplica(name: string): Promise<Replica> {
  const metrics = createMetrics();
  const cache = new ResponseCache(
    { memoryBytes: 8 * 1024 * 1024, ttlSeconds: 3600, maxEntryBytes: 256 * 1024, redisSlots: 4096, feedGraceMs: 5_000 },
    { redis: cacheRedis, metrics, logger: silent },
  );
  const follower = await followCatalogEvents(catalogEventFeed(system.bus), cache, silent);
  const { gateway } = await startFixtureGateway(
    { verifier: system.platform.verifier, db: { prisma: system.platform.database.prisma } },
    { subgraphUrls: { catalog: system.catalogUrl, ai: system.aiUrl }, metrics, responseCache: cache },
  );
  return { name, gateway, cache, metrics, follower };
}

async function graphql(replica: Replica, query: string, variables: Record<string, unknown> = {}): Promise<string> {
  const response = await fetch(`${replica.gateway.url}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'x-tenant-id': TENANT, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const text = await response.text();
  expect(JSON.parse(text), text).not.toHaveProperty('errors');
  return text;
}

async function restCourse(replica: Replica, courseId: string, ifNoneMatch?: string) {
  const response = await fetch(`${replica.gateway.url}/api/v1/courses/${courseId}`, {
    headers: {
      authorization: `Bearer ${token}`,
      'x-tenant-id': TENANT,
      ...(ifNoneMatch ? { 'if-none-match': ifNoneMatch } : {}),
    },
  });
  return { status: response.status, etag: response.headers.get('etag') ?? '', body: await response.text() };
}

async function hits(replica: Replica): Promise<number> {
  const text = (await replica.metrics.render()).body;
  return Number(/^response_cache_requests_total\{result="hit"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

/**
 * The answer of `read` on `replica`, shown to come from the cache: the second read is a hit with the
 * same answer. Retried: L2 refuses to store an answer while one of its tags was invalidated in the
 * last second (redis-store.ts), as it is right after the courses' events.
 */
function cachedOn(replica: Replica, read: (r: Replica) => Promise<string>): Promise<string> {
  return eventually(async () => {
    const first = await read(replica);
    const before = await hits(replica);
    expect(await read(replica)).toBe(first);
    expect(await hits(replica), `${replica.name}: a hit`).toBe(before + 1);
    return first;
  }, `${replica.name}: a cached answer`);
}

/** Waits until `replica` applied the invalidation of every catalog event committed so far (one outbox row each). */
async function invalidationsCaughtUp(replica: Replica): Promise<void> {
  const committed = await system.platform.database.prisma.outboxEvent.count({ where: { tenantId: TENANT } });
  await eventually(async () => {
    const text = (await replica.metrics.render()).body;
    const applied = Number(/^response_cache_invalidations_total\{source="event"\} (\d+)/m.exec(text)?.[1] ?? 0);
    expect(applied).toBeGreaterThanOrEqual(committed);
  }, `${replica.name}: the invalidations of ${committed} catalog events`);
}

/** The bodies this replica's L1 holds (the memory store's entries; no public API lists them). */
function l1Bodies(replica: Replica): string[] {
  const memory = replica.cache['memory'] as unknown as { entries?: Map<string, { body: string }> };
  if (!(memory.entries instanceof Map)) throw new Error('the L1 store no longer keeps its entries in `entries`: update l1Bodies');
  return [...memory.entries.values()].map((entry) => entry.body);
}

/**
 * How many L2 entries (redis-store.ts: `<key>\n<tags>\n<tokens>\n<body>`) hold `needle`, and how
 * many of them a replica could still serve (every tag's token is the recorded one). Both must reach
 * 0: an invalidated entry is never served, but its bytes are a copy of the erased id until they are
 * deleted (before the sweep they stayed until the TTL).
 */
async function l2Copies(needle: string): Promise<{ stored: number; live: number }> {
  const copies = { stored: 0, live: 0 };
  if (!cacheRedis) return copies;
  let cursor = '0';
  do {
    const [next, keys] = await cacheRedis.scan(cursor, 'MATCH', 'rc:e:*', 'COUNT', 1000);
    cursor = next;
    const values = keys.length ? await cacheRedis.mget(keys) : [];
    for (const value of values) {
      if (!value?.includes(needle)) continue;
      copies.stored += 1;
      const [, tagLine, tokenLine] = value.split('\n');
      const tags = tagLine.split(' ');
      const current = await cacheRedis.mget(tags.map((tag) => `rc:t:${tag}`));
      if (tokenLine.split(' ').every((token, i) => current[i] === token)) copies.live += 1;
    }
  } while (cursor !== '0');
  return copies;
}

/** The rows of every table of the database holding one of `needles`, as `database <table>` and the row's JSON. */
async function databaseCopies(needles: readonly string[]): Promise<Array<[string, string]>> {
  const rows = await rowsHolding(system.platform.database.prisma, needles);
  return rows.map(([table, row]) => [`database ${table}`, row]);
}

/** What a replay of the tenant's archive would publish, captured instead of sent. */
async function archiveReplay(since: Date): Promise<string[]> {
  const sent: string[] = [];
  const capture = {
    publish: async (_subject: string, data: Uint8Array) => {
      sent.push(Buffer.from(data).toString('utf8'));
      return { stream: 'CATALOG', seq: sent.length, duplicate: false };
    },
  } as unknown as EventBus;
  await replayFromArchive(system.platform.database.prisma, capture, {
    since,
    until: new Date(Date.now() + 60_000),
    tenantId: TENANT,
  });
  return sent;
}

async function send(envelope: EventEnvelope) {
  await system.bus.publish(subjectFor(envelope.eventType, envelope.eventVersion), Buffer.from(JSON.stringify(envelope)), {
    msgId: envelope.eventId,
    headers: { traceparent: CONSUMED_TRACEPARENT, 'Content-Type': 'application/json' },
  });
}

/**
 * The subject, as an admin, publishes a taxonomy through a gateway replica: its version's author,
 * the events' actor, and the caller of the Idempotency-Key records (the gateway's and the catalog's).
 */
async function publishTaxonomyAs(userId: string) {
  const admin = await mintToken(running.keys.privateJwk, { sub: userId, tid: TENANT, scope: 'catalog.admin' });
  const response = await fetch(`${replicas[0].gateway.url}/graphql`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${admin}`,
      'x-tenant-id': TENANT,
      'content-type': 'application/json',
      'idempotency-key': newUlid(),
    },
    body: JSON.stringify({
      query: 'mutation($input: PublishTaxonomyInput!) { publishTaxonomy(input: $input) { version } }',
      variables: { input: { namespace: 'clinical', diff: { added: [{ path: 'sepsis', label: { en: 'Sepsis' } }] } } },
    }),
  });
  expect(await response.json()).toEqual({ data: { publishTaxonomy: { version: 1 } } });
}

/**
 * A built event naming the subject as author, of a package format this catalog does not publish
 * yet: held (HeldPlayPackage) until a release knows the format. Built as v1 and changed after, as
 * a producer ahead of our schema copy would send it.
 */
function heldPackage(): EventEnvelope {
  const author = { userId: AUTHOR, role: 'author', displayName: AUTHOR_NAME };
  const envelope = consumedEnvelope('built', builtPayload(TENANT, 'held', '1.0.0', { authors: [author] }));
  const payload = envelope.payload as { playPackage: { format: string } };
  payload.playPackage.format = 'v9';
  return envelope;
}

const courseRow = (slug: string) =>
  system.platform.database.prisma.course.findUnique({
    where: { tenantId_slug: { tenantId: TENANT, slug } },
    include: { versions: true },
  });

beforeAll(async () => {
  running = await startTestSystem('erasure-every-copy');
  system = running.system;
  expect(system.bus.kind).toBe('in-process');
  if (redisUrl) cacheRedis = await connectRedis(redisUrl, silent);
  token = await mintToken(running.keys.privateJwk, { sub: 'svc:erasure-test', tid: TENANT, scope: 'catalog.read' });
  replicas.push(await startReplica('replica 1'), await startReplica('replica 2'));
}, 120_000);

afterAll(async () => {
  for (const replica of replicas) {
    await replica.follower.close();
    await replica.gateway.close();
  }
  cacheRedis?.disconnect();
  await running?.stop();
});

describe('erasure reaches every copy within 10 s of the GDPR event', () => {
  it('leaves no copy of an erased author or of an erased publisher who is not an author', async () => {
    const startedAt = new Date(Date.now() - 1000);
    await send(
      consumedEnvelope(
        'built',
        builtPayload(TENANT, 'authored', '1.0.0', {
          authors: [{ userId: AUTHOR, role: 'author', displayName: AUTHOR_NAME }, KEPT],
        }),
      ),
    );
    await send(
      consumedEnvelope('built', builtPayload(TENANT, 'published', '1.0.0', { authors: [KEPT], publishedBy: PUBLISHER })),
    );
    await publishTaxonomyAs(AUTHOR);
    await send(heldPackage());
    const [authored, published] = await eventually(async () => {
      const rows = [await courseRow('authored'), await courseRow('published')];
      expect(rows.map((row) => row?.versions.length)).toEqual([1, 1]);
      return rows.map((row) => row!);
    }, 'both courses and their versions');
    const version = published.versions[0];
    expect(version.publishedBy).toBe(PUBLISHER);

    // Every read is cached on both replicas and shows the ids the scans look for.
    const reads: Array<[string, (r: Replica) => Promise<string>, string]> = [
      ['course(authored)', (r) => graphql(r, COURSE, { id: authored.id }), AUTHOR],
      ['course(published)', (r) => graphql(r, COURSE, { id: published.id }), PUBLISHER],
      ['courseVersion(published)', (r) => graphql(r, VERSION, { id: version.id }), PUBLISHER],
      ['courses', (r) => graphql(r, LIST), PUBLISHER],
    ];
    const oldEtags: string[] = [];
    for (const replica of replicas) {
      // Cached after the courses' own events, which would drop them again.
      await invalidationsCaughtUp(replica);
      for (const [what, read, id] of reads) expect(await cachedOn(replica, read), `${replica.name} ${what}`).toContain(id);
      const rest = await restCourse(replica, authored.id);
      expect(rest.body).toContain(AUTHOR);
      oldEtags.push(rest.etag);
      expect(l1Bodies(replica).join('\n')).toContain(PUBLISHER);
    }
    await cachedOn(replicas[0], (r) => graphql(r, UNREAD_AFTER, { id: version.id }));
    if (cacheRedis) expect((await l2Copies(PUBLISHER)).live).toBeGreaterThan(reads.length - 1);
    // The scans of the database and of the archive find the ids while they are there.
    expect((await databaseCopies([PUBLISHER])).map(([where]) => where)).toContain('database CourseVersion');
    expect((await databaseCopies([AUTHOR])).map(([where]) => where)).toEqual(
      expect.arrayContaining([
        'database Course',
        'database TaxonomyVersion',
        'database HeldPlayPackage',
        'database OutboxEvent',
        'database IdempotencyRecord',
        'database IdempotentEffect',
      ]),
    );
    await eventually(
      async () => expect((await archiveReplay(startedAt)).join('\n')).toContain(AUTHOR_NAME),
      'the relay published the events (the archive)',
    );

    const afterErasure: string[] = [];
    const stopFollowing = await system.bus.follow(catalogSubjects(), {
      onMessage: (_subject, data) => afterErasure.push(Buffer.from(data).toString('utf8')),
      onGap: () => afterErasure.push('gap'),
    });
    const erasedAt = Date.now();
    await send(consumedEnvelope('gdpr', gdprPayload(TENANT, AUTHOR, 'erasure')));
    await send(consumedEnvelope('gdpr', gdprPayload(TENANT, PUBLISHER, 'erasure')));

    /** Where an erased id or name is still found, e.g. `replica 1 L1: usr_…`; empty once the erasure reached every copy. */
    const remainingCopies = async (): Promise<string[]> => {
      const needles = [AUTHOR, PUBLISHER, AUTHOR_NAME];
      const copies: Array<[string, string]> = await databaseCopies(needles);
      copies.push(...afterErasure.map((message): [string, string] => ['bus after the erasure', message]));
      copies.push(...(await archiveReplay(startedAt)).map((message): [string, string] => ['archive replay', message]));
      for (const replica of replicas) {
        copies.push(...l1Bodies(replica).map((body): [string, string] => [`${replica.name} L1`, body]));
        for (const [what, read] of reads) copies.push([`${replica.name} ${what}`, await read(replica)]);
        copies.push([`${replica.name} REST`, (await restCourse(replica, authored.id)).body]);
      }
      const found = copies.flatMap(([where, text]) => needles.filter((n) => text.includes(n)).map((n) => `${where}: ${n}`));
      for (const needle of needles) {
        const { stored, live } = await l2Copies(needle);
        if (stored) found.push(`L2 (${stored} stored entries, ${live} live): ${needle}`);
      }
      return found;
    };

    await eventually(
      async () => {
        expect(await remainingCopies()).toEqual([]);
        // Not vacuous: the answers show the erasure, and its events went out.
        for (const replica of replicas) {
          expect(await graphql(replica, VERSION, { id: version.id })).toContain(ERASED_USER_ID);
          expect(await graphql(replica, COURSE, { id: authored.id })).toContain(ERASED_USER_ID);
        }
        expect(afterErasure.join('\n')).toContain('catalog.course_version.redacted');
        expect(afterErasure.join('\n')).toContain('catalog.course.metadata_updated');
      },
      'no copy of the erased ids',
      { timeoutMs: Math.max(0, ERASURE_DEADLINE_MS - (Date.now() - erasedAt)) },
    );
    // The scan that found nothing ended within the deadline (eventually may start its last one just before it).
    expect(Date.now() - erasedAt).toBeLessThanOrEqual(ERASURE_DEADLINE_MS);
    await stopFollowing();
    expect(afterErasure).not.toContain('gap');

    // The REST ETag moved: a client holding the old one gets the redacted course, not a 304.
    for (const [i, replica] of replicas.entries()) {
      const rest = await restCourse(replica, authored.id, oldEtags[i]);
      expect(rest.status, replica.name).toBe(200);
      expect(rest.etag).not.toBe(oldEtags[i]);
      expect(rest.body).toContain(ERASED_USER_ID);
    }
  });
});
