import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subjectFor, type EventEnvelope } from '../../../events/envelope.js';
import { mintToken } from '../../../platform/auth/dev-keys.js';
import { newId, newUlid } from '../../../platform/ids.js';
import type { System } from '../../../processes/system.js';
import { builtPayload, consumedEnvelope, CONSUMED_TRACEPARENT, draftPayload, gdprPayload } from '../catalog/harness.js';
import { eventually } from '../../support/eventually.js';
import { startTestSystem, type TestSystem } from '../../support/in-process-system.js';

/**
 * The response cache against changes that reach the catalog as consumed events, in the one-process
 * system without NATS (embedded mode: the cache follows the in-process bus). Each consumed event
 * the catalog handles (a built play package, a published draft, a GDPR request) changes rows and
 * publishes the catalog's own event; the cached answers must follow. Before that, the repeated read
 * is shown to be a hit, so an answer that changes came through an invalidation, not a miss.
 */
const TENANT = newId('tenant');
const LIST = '{ courses(first: 100) { edges { node { courseId slug latestVersionLabel } } } }';
const ONE = 'query One($id: ID!) { course(courseId: $id) { courseId title latestVersionLabel authors { userId displayName } } }';

interface CourseNode {
  courseId: string;
  slug: string;
  latestVersionLabel: string | null;
  title: Record<string, string>;
  authors: Array<{ userId: string; displayName: string }>;
}

let running: TestSystem;
let system: System;
let token: string;

async function graphql(query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(`${system.gatewayUrl}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'x-tenant-id': TENANT, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: { courses?: { edges: Array<{ node: CourseNode }> }; course?: CourseNode } };
  return body.data;
}

async function hits(): Promise<number> {
  const text = await (await fetch(`${system.gatewayUrl}/metrics`)).text();
  return Number(/^response_cache_requests_total\{result="hit"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

/** Invalidations the cache applied for catalog events (response_cache_invalidations_total). */
async function eventInvalidations(): Promise<number> {
  const text = await (await fetch(`${system.gatewayUrl}/metrics`)).text();
  return Number(/^response_cache_invalidations_total\{source="event"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

/**
 * Waits until the cache has applied the invalidation of every catalog event committed so far (one
 * outbox row each, published once). A change is readable from its commit, its events reach the
 * cache a relay round later (the staleness bound, docs/operations.md): an answer cached in between
 * is already fresh, but the change's own invalidations, landing after it, drop it again.
 */
async function invalidationsCaughtUp(): Promise<void> {
  const committed = await system.platform.database.prisma.outboxEvent.count({ where: { subject: { startsWith: 'catalog.' } } });
  await eventually(
    async () => expect(await eventInvalidations()).toBeGreaterThanOrEqual(committed),
    `the invalidations of ${committed} committed catalog events`,
  );
}

/** Reads twice and checks the second read was served from the cache, once every committed change was invalidated. */
async function cached<T>(read: () => Promise<T>): Promise<T> {
  await invalidationsCaughtUp();
  const first = await read();
  const before = await hits();
  const second = await read();
  expect(await hits()).toBe(before + 1);
  expect(second).toEqual(first);
  return second;
}

async function send(envelope: EventEnvelope) {
  await system.bus.publish(subjectFor(envelope.eventType, envelope.eventVersion), Buffer.from(JSON.stringify(envelope)), {
    msgId: envelope.eventId,
    headers: { traceparent: CONSUMED_TRACEPARENT, 'Content-Type': 'application/json' },
  });
}

/** Slugs are lower-case words; a fresh one per test keeps the tests apart. */
const uniqueSlug = () => newUlid().slice(-10).toLowerCase();
const courseBySlug = async (slug: string) => (await graphql(LIST))?.courses?.edges.find((e) => e.node.slug === slug)?.node;
const course = async (courseId: string) => (await graphql(ONE, { id: courseId }))?.course;

beforeAll(async () => {
  running = await startTestSystem('response-cache-consumed', {
    RESPONSE_CACHE_ENABLED: 'true',
    // A TTL far beyond the test: only an invalidation can make an answer change.
    RESPONSE_CACHE_TTL_SECONDS: '3600',
  });
  system = running.system;
  expect(system.bus.kind).toBe('in-process');
  token = await mintToken(running.keys.privateJwk, { sub: 'svc:cache-test', tid: TENANT, scope: 'catalog.read' });
}, 120_000);

afterAll(() => running?.stop());

describe('response cache, embedded mode: consumed events invalidate what they change', () => {
  it('content.play_package.built registers a course: the cached list shows it', async () => {
    const slug = `built-${uniqueSlug()}`;
    const before = await cached(() => courseBySlug(slug));
    expect(before).toBeUndefined();
    await send(consumedEnvelope('built', builtPayload(TENANT, slug, '1.0.0')));
    await eventually(async () => expect((await courseBySlug(slug))?.latestVersionLabel).toBe('1.0.0'), 'the registered course');
  });

  it('content.play_package.built adds a version: the cached course shows it', async () => {
    const slug = `version-${uniqueSlug()}`;
    await send(consumedEnvelope('built', builtPayload(TENANT, slug, '1.0.0')));
    const registered = await eventually(async () => {
      const found = await courseBySlug(slug);
      expect(found?.slug).toBe(slug);
      return found!;
    }, 'the registered course');
    expect((await cached(() => course(registered.courseId)))?.latestVersionLabel).toBe('1.0.0');
    await send(consumedEnvelope('built', builtPayload(TENANT, slug, '1.1.0')));
    await eventually(
      async () => expect((await course(registered.courseId))?.latestVersionLabel).toBe('1.1.0'),
      'the new version',
    );
  });

  it('authoring.course_draft.published changes metadata: the cached course shows the new title', async () => {
    const slug = `draft-${uniqueSlug()}`;
    await send(consumedEnvelope('built', builtPayload(TENANT, slug, '1.0.0')));
    const registered = await eventually(async () => (await courseBySlug(slug)) ?? expect.fail('not yet'), 'the course');
    expect((await cached(() => course(registered.courseId)))?.title).toEqual({ en: `${slug} (package)` });
    await send(consumedEnvelope('draft', draftPayload(TENANT, slug, { title: { en: 'Retitled by a draft' } })));
    await eventually(
      async () => expect((await course(registered.courseId))?.title).toEqual({ en: 'Retitled by a draft' }),
      'the new title',
    );
  });

  it('gdpr.subject_request.received (erasure): a redacted author never comes back from the cache', async () => {
    const slug = `gdpr-${uniqueSlug()}`;
    const ada = newId('user');
    await send(consumedEnvelope('built', builtPayload(TENANT, slug, '1.0.0')));
    await send(
      consumedEnvelope(
        'draft',
        draftPayload(TENANT, slug, { authors: [{ userId: ada, role: 'author', displayName: 'Ada Lovelace' }] }),
      ),
    );
    const registered = await eventually(async () => {
      const found = await courseBySlug(slug);
      expect(found?.slug).toBe(slug);
      expect((await course(found!.courseId))?.authors.map((a) => a.displayName)).toEqual(['Ada Lovelace']);
      return found!;
    }, 'the course with its author');
    expect((await cached(() => course(registered.courseId)))?.authors[0].displayName).toBe('Ada Lovelace');
    await send(consumedEnvelope('gdpr', gdprPayload(TENANT, ada, 'erasure')));
    await eventually(
      async () => expect((await course(registered.courseId))?.authors[0].displayName).toBe('[redacted]'),
      'the redacted author',
    );
    for (let i = 0; i < 5; i++) expect(JSON.stringify(await course(registered.courseId))).not.toContain('Ada Lovelace');
  });
});
