import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { eventTags } from '../../../gateway/response-cache/cache-policy.logic.js';
import { ResponseCache } from '../../../gateway/response-cache/response-cache.js';
import { createLogger } from '../../../platform/observability/logger.js';
import { CatalogModel, freshAnswer, modelServer, type ModelServer } from '../../support/cache-model.js';
import { eventually } from '../../support/eventually.js';

/**
 * The response cache plugin in an Apollo server over the catalog model (cache-model.ts): which
 * mutations invalidate. A row changed under the cache without an event tells a cached answer (the
 * old row) from a fetched one (the new row).
 */
const SETTINGS = { memoryBytes: 8_000_000, ttlSeconds: 600, maxEntryBytes: 1_000_000, redisSlots: 100, feedGraceMs: 5_000 };
const READ = 'query Read($id: ID!) { course(courseId: $id) { courseId title } }';
const WRITE = 'mutation Write($id: ID!, $title: String!) { updateCourseMetadata(courseId: $id, title: $title) { courseId } }';

let model: CatalogModel;
let cache: ResponseCache;
let server: ModelServer;

beforeEach(async () => {
  model = new CatalogModel();
  cache = new ResponseCache(SETTINGS, { logger: createLogger({ level: 'silent' }) });
  server = await modelServer(() => model, cache);
});
afterEach(() => server.stop());

/** Caches c1's answer, then changes its row without an event: a read that still shows the old title was served from the cache. */
async function cachedThenChangedUnderneath(): Promise<string> {
  const cached = (await server.answer(READ, { id: 'c1' })).text;
  model.courses.get('c1')!.title = 'changed underneath';
  return cached;
}

describe('mutations and the response cache', () => {
  it('a refused mutation (a token without the scope) drops nothing', async () => {
    const cached = await cachedThenChangedUnderneath();
    const refused = await server.answer(WRITE, { id: 'c1', title: 'x' }, ['catalog.read']);
    expect(refused.text).toContain('auth.forbidden');
    expect((await server.answer(READ, { id: 'c1' })).text).toBe(cached);
  });

  it('a failed mutation (errors, no data) drops nothing', async () => {
    const cached = await cachedThenChangedUnderneath();
    const failed = await server.answer(WRITE, { id: 'c-missing', title: 'x' }, ['catalog.write']);
    expect(failed.text).toContain('course.not_found');
    expect((await server.answer(READ, { id: 'c1' })).text).toBe(cached);
  });

  it('a mutation that took effect drops what it changed before it answers', async () => {
    await cachedThenChangedUnderneath();
    await server.answer(WRITE, { id: 'c1', title: 'x' }, ['catalog.write']);
    expect((await server.answer(READ, { id: 'c1' })).text).toContain('"title":"x"');
  });

  it("a mutation of one course keeps the tenant's other courses cached, and drops its lists", async () => {
    const cached = await cachedThenChangedUnderneath();
    const list = 'query { courses { count edges { node { courseId title } } } }';
    await server.answer(list, {});
    await server.answer(WRITE, { id: 'c2', title: 'x' }, ['catalog.write']);
    expect((await server.answer(READ, { id: 'c1' })).text).toBe(cached);
    expect((await server.answer(list, {})).text).toBe(await freshAnswer(model, list, {}));
  });

  it('a version mutation whose answer does not name its course drops the whole tenant', async () => {
    const cached = await cachedThenChangedUnderneath();
    const deprecate = 'mutation { deprecateCourseVersion(courseVersionId: "v3") { state } }';
    expect((await server.answer(deprecate, {}, ['catalog.write'])).text).toContain('DEPRECATED');
    expect((await server.answer(READ, { id: 'c1' })).text).not.toBe(cached);
  });
});

describe('single-flight', () => {
  it('a burst of one missing key makes one fetch; every request gets its answer', async () => {
    let release!: () => void;
    model.gate = new Promise((resolve) => (release = resolve));
    const lookups = vi.spyOn(cache, 'lookup');
    const burst = Array.from({ length: 200 }, () => server.answer(READ, { id: 'c1' }));
    // Every request has asked the cache before the first fetch answers.
    await eventually(() => expect(lookups).toHaveBeenCalledTimes(200), 'every request to ask the cache');
    release();
    const answers = await Promise.all(burst);
    expect(model.courseFetches).toBe(1);
    expect(new Set(answers.map((a) => a.text))).toEqual(new Set([await freshAnswer(model, READ, { id: 'c1' })]));
  });

  it('waiters fetch on their own when the answer in flight was invalidated meanwhile', async () => {
    let release!: () => void;
    model.gate = new Promise((resolve) => (release = resolve));
    const lookups = vi.spyOn(cache, 'lookup');
    const first = server.answer(READ, { id: 'c1' });
    const second = server.answer(READ, { id: 'c1' });
    await eventually(() => expect(lookups).toHaveBeenCalledTimes(2), 'both requests to ask the cache');
    await cache.invalidate(eventTags(model.apply({ kind: 'retitle', course: 0, title: 'New' })), 'event');
    release();
    await first;
    expect((await second).text).toContain('New');
    expect(model.courseFetches).toBe(2);
  });
});

describe('keys', () => {
  it('leave undeclared variables out: an extra variable is the same key, not a new one', async () => {
    const cached = await cachedThenChangedUnderneath();
    expect((await server.answer(READ, { id: 'c1', nonce: 'a' })).text).toBe(cached);
    expect((await server.answer(READ, { id: 'c1', nonce: 'b', other: 1 })).text).toBe(cached);
    // A declared variable still makes its own key.
    expect((await server.answer(READ, { id: 'c2' })).text).toContain('Title c2');
  });
});
