import { buildSchema, parse, type OperationDefinitionNode } from 'graphql';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../platform/text/canonical-json.js';
import { RedisStore, SWEEP_BATCH } from '../../../gateway/response-cache/redis-store.js';
import { operationShape } from '../../../gateway/response-cache/document.js';
import {
  decide,
  entityTag,
  entryTags,
  eventTags,
  GLOBAL_TAG,
  invalidationLagSeconds,
  keyParts,
  listTag,
  tenantsOfTags,
  tenantTag,
  type OperationShape,
} from '../../../gateway/response-cache/cache-policy.logic.js';
import { InvalidationLog } from '../../../gateway/response-cache/invalidation-log.logic.js';
import { MemoryStore } from '../../../gateway/response-cache/memory-store.logic.js';
import { resultWithParsedData, StoredData, stringifyResult } from '../../../gateway/response-cache/stored-answer.js';
import { TokenCheck } from '../../../gateway/response-cache/token-check.js';

const shape = (overrides: Partial<OperationShape> = {}): OperationShape => ({
  kind: 'query',
  rootFields: ['course'],
  selectsNonCatalogField: false,
  argumentIds: [],
  catalogMutation: false,
  ...overrides,
});

describe('what the response cache keeps', () => {
  it('caches catalog reads only', () => {
    expect(decide(shape())).toEqual({ cacheable: true });
    expect(decide(shape({ kind: 'mutation' }))).toEqual({ cacheable: false, reason: 'not_a_query' });
    expect(decide(shape({ rootFields: ['course', 'provenance'] }))).toEqual({ cacheable: false, reason: 'root_field' });
    expect(decide(shape({ rootFields: [] }))).toEqual({ cacheable: false, reason: 'root_field' });
    expect(decide(shape({ selectsNonCatalogField: true }))).toEqual({ cacheable: false, reason: 'non_catalog_field' });
  });

  it('keys by sorted scopes and normalised Accept-Language', () => {
    const base = { tenantId: 't', queryHash: 'h', operationName: null, variables: '{}' };
    const a = keyParts({ ...base, scopes: new Set(['b', 'a']), acceptLanguage: 'fr, en' });
    const b = keyParts({ ...base, scopes: new Set(['a', 'b']), acceptLanguage: 'FR,en' });
    expect(a).toEqual(b);
    expect(keyParts({ ...base, scopes: new Set(['a']), acceptLanguage: 'fr, en' })).not.toEqual(a);
  });
});

describe('tags', () => {
  it('names a course answer by the ids it holds, and a list by the tenant list tag', () => {
    const ids = [
      { field: 'courseId' as const, id: 'c1' },
      { field: 'courseVersionId' as const, id: 'v1' },
    ];
    const one = entryTags('t1', shape(), { course: {} }, { ids, complete: true });
    expect(one.sort()).toEqual(
      [GLOBAL_TAG, tenantTag('t1'), entityTag('t1', 'courseId', 'c1'), entityTag('t1', 'courseVersionId', 'v1')].sort(),
    );
    const none = { ids: [], complete: true };
    expect(entryTags('t1', shape({ rootFields: ['courses'] }), { courses: { edges: [] } }, none)).toContain(listTag('t1'));
    // An absent course may be registered next; an answer whose entities are not all named cannot be narrowed.
    expect(entryTags('t1', shape(), { course: null }, none)).toContain(listTag('t1'));
    expect(entryTags('t1', shape(), { course: { title: {} } }, { ids, complete: false })).toContain(listTag('t1'));
  });

  it.each([
    'catalog.course.registered',
    'catalog.course.metadata_updated',
    'catalog.course.visibility_changed',
    'catalog.course.archived',
    'catalog.course_version.published',
    'catalog.course_version.deprecated',
    'catalog.course_version.withdrawn',
  ])('%s drops its course and the tenant list', (eventType) => {
    const tags = eventTags({ eventType, tenantId: 't1', partitionKey: 'c1', payload: { courseId: 'c1', courseVersionId: 'v1' } });
    expect(tags).toContain(entityTag('t1', 'courseId', 'c1'));
    expect(tags).toContain(listTag('t1'));
    expect(tags).not.toContain(tenantTag('t2'));
  });

  it('drops the whole tenant for taxonomy and unknown events, and everything without a tenant', () => {
    expect(eventTags({ eventType: 'catalog.taxonomy.updated', tenantId: 't1', payload: { taxonomyId: 'x' } })).toEqual([
      tenantTag('t1'),
    ]);
    expect(eventTags({ eventType: 'catalog.something.new', tenantId: 't1' })).toEqual([tenantTag('t1')]);
    expect(eventTags({ eventType: 'catalog.course.archived', tenantId: 't1', payload: {} })).toEqual([tenantTag('t1')]);
    expect(eventTags({})).toEqual([GLOBAL_TAG]);
  });

  it('names the tenants whose stored entries an invalidation drops (for the Redis sweep)', () => {
    const tenant = 'ten a:b c';
    const event = eventTags({ eventType: 'catalog.course.archived', tenantId: tenant, partitionKey: 'c1', payload: {} });
    expect(tenantsOfTags(event)).toEqual(new Set([tenant]));
    expect(tenantsOfTags([tenantTag(tenant), entityTag('t2', 'courseVersionId', 'v:1')])).toEqual(new Set([tenant, 't2']));
    expect(tenantsOfTags([listTag('t1'), GLOBAL_TAG])).toBe('all');
    expect(tenantsOfTags([])).toEqual(new Set());
  });

  it('keeps tag parts from breaking the stored format', () => {
    expect(entityTag('a b', 'courseId', 'x:y\n')).not.toMatch(/\s/);
  });
});

describe('invalidation lag', () => {
  const at = Date.parse('2026-11-26T10:00:00.000Z');

  it('is the seconds from the event occurredAt to the end of the invalidation', () => {
    expect(invalidationLagSeconds('2026-11-26T10:00:00.000Z', at + 87)).toBe(0.087);
    expect(invalidationLagSeconds('2026-11-26T10:00:00Z', at + 1_500)).toBe(1.5);
    expect(invalidationLagSeconds('2026-11-26T11:00:00.000+01:00', at + 250)).toBe(0.25);
  });

  it('counts a producer clock ahead of this replica as no lag', () => {
    expect(invalidationLagSeconds('2026-11-26T10:00:00.000Z', at - 40)).toBe(0);
  });

  it.each([undefined, null, 1764151200000, '', 'yesterday', '2026-11-26', '2026-13-45T99:00:00Z', { at: 1 }])(
    'measures nothing for an occurredAt of %j',
    (occurredAt) => {
      expect(invalidationLagSeconds(occurredAt, at)).toBeUndefined();
    },
  );
});

describe('L1 memory store', () => {
  it("bounds each tenant's share: a tenant past it loses its own oldest entries, no one else's", () => {
    const store = new MemoryStore(100_000, 10_000);
    for (let i = 0; i < 5; i++)
      store.set(`other${i}`, { body: 'y'.repeat(500), tags: ['g'], owner: 'quiet', expiresAt: Infinity });
    // One tenant churns: a new key each time (e.g. variables no one asks twice).
    for (let i = 0; i < 500; i++)
      store.set(`churn${i}`, { body: 'x'.repeat(500), tags: ['g'], owner: 'noisy', expiresAt: Infinity });
    expect(store.ownerBytes('noisy')).toBeLessThanOrEqual(10_000);
    expect(store.get('churn499', 0)?.owner).toBe('noisy');
    expect(store.get('churn0', 0)).toBeUndefined();
    for (let i = 0; i < 5; i++) expect(store.get(`other${i}`, 0)?.owner).toBe('quiet');
    // Dropped entries give their bytes back to their owner's share.
    store.invalidate(['g']);
    expect(store.ownerBytes('noisy')).toBe(0);
    expect(store.bytes()).toBe(0);
  });

  it('stays within its byte budget, oldest out first', () => {
    const store = new MemoryStore(10_000);
    for (let i = 0; i < 50; i++) store.set(`k${i}`, { body: 'x'.repeat(500), tags: ['g'], owner: 't1', expiresAt: Infinity });
    expect(store.bytes()).toBeLessThanOrEqual(10_000);
    expect(store.get('k49', 0)).toMatchObject({ body: 'x'.repeat(500), tags: ['g'] });
    expect(store.get('k0', 0)).toBeUndefined();
  });

  it('drops exactly the entries of a tag, and expired ones', () => {
    const store = new MemoryStore(1_000_000);
    store.set('a', { body: '1', tags: ['c:1'], owner: 't1', expiresAt: 100 });
    store.set('b', { body: '2', tags: ['c:2'], owner: 't1', expiresAt: 100 });
    expect(store.invalidate(['c:1'])).toBe(1);
    expect(store.get('a', 0)).toBeUndefined();
    expect(store.get('b', 0)?.body).toBe('2');
    expect(store.get('b', 100)).toBeUndefined();
    expect(store.bytes()).toBe(0);
  });
});

describe('stored answers', () => {
  const body = JSON.stringify({ data: { course: { courseId: 'c1', title: { en: 'T' } } } });

  it('are sent as stored, the bytes Apollo would write', () => {
    const data = new StoredData(body) as unknown as Record<string, unknown>;
    expect(stringifyResult({ errors: undefined, data, extensions: undefined })).toBe(`${body}\n`);
    expect(stringifyResult({ data: JSON.parse(body).data })).toBe(`${body}\n`);
  });

  it('are parsed wherever something else goes with them or reads them', () => {
    const data = new StoredData(body) as unknown as Record<string, unknown>;
    const withExtensions = stringifyResult({ data, extensions: { cost: 1 } });
    expect(JSON.parse(withExtensions)).toEqual({ ...JSON.parse(body), extensions: { cost: 1 } });
    expect(resultWithParsedData({ data })).toEqual(JSON.parse(body));
    expect(JSON.stringify({ data })).toBe(body);
  });
});

describe('operation shape', () => {
  const schema = buildSchema('type Query { course(courseId: ID!): Course } type Course { courseId: ID! title: String }');
  const document = parse(
    'query One($id: ID!) { course(courseId: $id) { courseId title } } query Two { course(courseId: "c9") { title } }',
  );
  const [one] = document.definitions as OperationDefinitionNode[];
  const shapeOf = (operation: OperationDefinitionNode, variables: Record<string, unknown>) =>
    operationShape({ document, operation, schema, variables, nonCatalog: new Set() });

  it('is walked once per document but takes each request its own id arguments', () => {
    // Every operation of the document is walked: the literal id of the other one is in too.
    expect(shapeOf(one, { id: 'c1' }).argumentIds).toEqual([
      { field: 'courseId', id: 'c1' },
      { field: 'courseId', id: 'c9' },
    ]);
    expect(shapeOf(one, { id: 'c2' }).argumentIds).toEqual([
      { field: 'courseId', id: 'c2' },
      { field: 'courseId', id: 'c9' },
    ]);
    expect(shapeOf(one, { id: 'c1' }).rootFields).toEqual(['course']);
  });
});

describe('L1 confirmation against Redis tokens', () => {
  it('confirms many entries in one read, and never by a read that began before the check was asked', async () => {
    const tokens = new Map([
      ['a', '1'],
      ['b', '1'],
    ]);
    const reads: Array<{ tags: readonly string[]; release: () => void }> = [];
    const check = new TokenCheck(
      (tags) =>
        new Promise((resolve) => {
          reads.push({ tags, release: () => resolve(tags.map((tag) => tokens.get(tag))) });
        }),
    );
    const first = check.check(['a'], ['1']);
    expect(reads).toHaveLength(1);
    // Asked while the first read is in flight: they wait for the next read, together.
    const second = check.check(['a', 'b'], ['1', '1']);
    const third = check.check(['b'], ['1']);
    expect(reads).toHaveLength(1);
    tokens.set('b', '2'); // another replica's write, after the first read began
    reads[0].release();
    expect(await first).toBe(true);
    await Promise.resolve();
    expect(reads).toHaveLength(2);
    expect([...reads[1].tags].sort()).toEqual(['a', 'b']);
    reads[1].release();
    expect(await second).toBe(false);
    expect(await third).toBe(false);
  });

  it('fails every entry of a read that failed, and reads again for the next', async () => {
    let fail = true;
    const check = new TokenCheck(async (tags) => {
      if (fail) throw new Error('redis down');
      return tags.map(() => 't');
    });
    await expect(check.check(['a'], ['t'])).rejects.toThrow('redis down');
    fail = false;
    expect(await check.check(['a'], ['t'])).toBe(true);
  });
});

describe('invalidation log', () => {
  it('says whether one of the tags was invalidated after a given count', () => {
    const log = new InvalidationLog(100);
    log.record(['c:1', 'l:t'], 5);
    expect(log.changedSince(['c:1'], 4)).toBe(true);
    expect(log.changedSince(['c:1'], 5)).toBe(false);
    expect(log.changedSince(['c:2', 't:t'], 4)).toBe(false);
    log.clear(6);
    expect(log.changedSince(['c:2'], 5)).toBe(true);
    expect(log.changedSince(['c:2'], 6)).toBe(false);
  });

  it('forgets its oldest tags beyond its bound by counting everything before them as changed', () => {
    const log = new InvalidationLog(2);
    log.record(['a'], 1);
    log.record(['b'], 2);
    log.record(['a'], 3);
    log.record(['c'], 4);
    // b (the least recently invalidated) was forgotten: a read older than its count is refused whatever its tags.
    expect(log.changedSince(['x'], 1)).toBe(true);
    expect(log.changedSince(['x'], 2)).toBe(false);
    expect(log.changedSince(['a'], 2)).toBe(true);
    expect(log.changedSince(['c'], 3)).toBe(true);
  });
});

describe('L2 slots', () => {
  const redis = { defineCommand() {} } as unknown as Redis;
  const store = new RedisStore(redis, { ttlSeconds: 60, slots: 4096, tenantSlots: 16 }, () => 'n');
  const keys = Array.from({ length: 2_000 }, (_, i) => sha256Hex(String(i)));

  it("keep each tenant's entries within its own window of slots", () => {
    const slotsOf = (tenant: string) => new Set(keys.map((key) => store.slotOf(key, tenant)));
    expect(slotsOf('ten_noisy').size).toBeLessThanOrEqual(16);
    expect(slotsOf('ten_noisy').size).toBeGreaterThan(8);
    // Another tenant's window is elsewhere (these two do not overlap).
    const other = slotsOf('ten_quiet');
    expect([...slotsOf('ten_noisy')].filter((slot) => other.has(slot))).toEqual([]);
  });

  it("sweeps every slot of a tenant's window and nothing else, in bounded batches", async () => {
    const calls: string[][] = [];
    const sweeping = {
      defineCommand() {},
      rcSweep: (count: number, ...batch: string[]) => {
        expect(batch).toHaveLength(count);
        calls.push(batch);
        return Promise.resolve(1);
      },
    } as unknown as Redis;
    const swept = new RedisStore(sweeping, { ttlSeconds: 60, slots: 4096, tenantSlots: 16 }, () => 'n');
    expect(await swept.sweep(new Set(['ten_noisy']))).toBe(1);
    const window = new Set(keys.map((key) => swept.slotOf(key, 'ten_noisy')));
    expect(calls.flat()).toHaveLength(16);
    for (const slot of window) expect(calls.flat()).toContain(slot);
    calls.length = 0;
    expect(await swept.sweep('all')).toBe(4096 / SWEEP_BATCH);
    expect(new Set(calls.flat()).size).toBe(4096);
    expect(Math.max(...calls.map((batch) => batch.length))).toBe(SWEEP_BATCH);
  });
});
