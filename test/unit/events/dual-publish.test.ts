import { describe, expect, it } from 'vitest';
import { newId, isUlid } from '../../../platform/ids.js';
import type { Tx } from '../../../platform/db/database.js';
import { manualClock } from '../../../platform/clock.js';
import { createEventProducer } from '../../../events/publish/outbox.js';
import { versionsToPublish, type RegistryInfo } from '../../../events/schemas/dual-publish.logic.js';
import { createSchemaRegistry, loadSchemaRegistry, readSchemaFiles } from '../../../events/schemas/registry.js';
import { courseEmit, testSource } from './fixtures.js';

const info = (...versions: Array<[number, string?]>): RegistryInfo => ({
  eventType: 'catalog.course.archived',
  versions: versions.map(([version, releasedAt]) => ({ version, releasedAt })),
});
const at = (iso: string) => new Date(iso);

describe('versionsToPublish', () => {
  it('publishes the only version', () => {
    expect(versionsToPublish('e', info([1, '2026-01-01T00:00:00Z']), at('2026-11-21T00:00:00Z'), 30)).toEqual([1]);
  });

  it('publishes both while the newer one is inside the dual-publish window', () => {
    const two = info([1, '2026-01-01T00:00:00Z'], [2, '2026-11-01T00:00:00Z']);
    expect(versionsToPublish('e', two, at('2026-11-21T00:00:00Z'), 30)).toEqual([1, 2]);
    expect(versionsToPublish('e', two, at('2026-11-30T23:59:59Z'), 30)).toEqual([1, 2]);
  });

  it('drops the older version once the window has passed', () => {
    const two = info([1, '2026-01-01T00:00:00Z'], [2, '2026-11-01T00:00:00Z']);
    expect(versionsToPublish('e', two, at('2026-12-01T00:00:00Z'), 30)).toEqual([2]);
    expect(versionsToPublish('e', two, at('2026-11-02T00:00:00Z'), 0)).toEqual([2]);
  });

  it('keeps publishing the released version while the next one is unreleased', () => {
    expect(versionsToPublish('e', info([2, undefined], [1, '2026-01-01T00:00:00Z']), at('2027-06-01T00:00:00Z'), 30)).toEqual([
      1, 2,
    ]);
  });

  it('handles three versions, each judged by its successor', () => {
    const three = info([1, '2026-01-01T00:00:00Z'], [2, '2026-06-01T00:00:00Z'], [3, '2026-11-10T00:00:00Z']);
    expect(versionsToPublish('e', three, at('2026-11-21T00:00:00Z'), 30)).toEqual([2, 3]);
  });
});

describe('event producer', () => {
  const files = readSchemaFiles();
  const archived = files.find((f) => f.name === 'catalog.course.archived')!;
  const v2 = {
    ...archived,
    version: 2,
    schema: { ...archived.schema, $id: 'schemas://catalog/course/archived/v2', required: ['courseId', 'reason'] },
  };
  const clock = manualClock('2026-11-21T12:00:00.000Z');
  const dual = createSchemaRegistry(
    [...files, v2],
    [
      {
        eventType: 'catalog.course.archived',
        version: 1,
        releasedAt: '2026-03-31T00:00:00.000Z',
        digest: '',
        schema: archived.schema,
      },
      { eventType: 'catalog.course.archived', version: 2, releasedAt: '2026-11-10T00:00:00.000Z', digest: '', schema: v2.schema },
    ],
  );

  /**
   * A transaction stand-in that records the outbox rows of the INSERT it is given: the statement's
   * one parameter is the rows as JSON (platform/db/bulk-sql.ts), each with its ordinal.
   */
  function fakeTx() {
    const rows: Array<Record<string, unknown>> = [];
    const tx = {
      $executeRaw: async (sql: { values: unknown[] }) => {
        expect(sql.values).toHaveLength(1);
        const records = JSON.parse(sql.values[0] as string) as Array<Record<string, unknown>>;
        for (const { ordinal: _ordinal, ...row } of records) rows.push(row);
        return records.length;
      },
    } as unknown as Tx;
    return { tx, rows };
  }

  it('writes one row per required version, each its own event of one correlation', async () => {
    const producer = createEventProducer({ registry: dual, clock, source: testSource, dualPublishDays: 30 });
    const { tx, rows } = fakeTx();
    const courseId = newId('course');
    const envelopes = await producer.emit(tx, {
      ...courseEmit(newId('tenant'), courseId),
      eventType: 'catalog.course.archived',
      correlationId: 'req-1',
      payloads: { 1: { courseId }, 2: { courseId, reason: 'retired' } },
    });
    expect(envelopes.map((e) => e.eventVersion)).toEqual([1, 2]);
    expect(rows.map((r) => r.subject)).toEqual(['catalog.course.archived.v1', 'catalog.course.archived.v2']);
    expect(new Set(envelopes.map((e) => e.eventId)).size).toBe(2);
    expect(envelopes.every((e) => isUlid(e.eventId) && e.correlationId === 'req-1')).toBe(true);
    expect(envelopes[1].schemaUri).toBe(dual.schemaUri('catalog.course.archived', 2));
  });

  it('refuses when a required version has no payload, or when one payload stands for several versions', async () => {
    const producer = createEventProducer({ registry: dual, clock, source: testSource, dualPublishDays: 30 });
    const { tx, rows } = fakeTx();
    const courseId = newId('course');
    const base = { ...courseEmit(newId('tenant'), courseId), eventType: 'catalog.course.archived' };
    await expect(producer.emit(tx, { ...base, payloads: { 2: { courseId, reason: 'x' } } })).rejects.toMatchObject({
      code: 'events.missing_version_payload',
      details: { missing: [1] },
    });
    await expect(producer.emit(tx, { ...base, payload: { courseId } })).rejects.toMatchObject({
      code: 'events.missing_version_payload',
    });
    expect(rows).toEqual([]);
  });

  it('takes a single payload after the window, and ignores payloads of versions no longer published', async () => {
    const later = manualClock('2026-12-20T00:00:00.000Z');
    const producer = createEventProducer({ registry: dual, clock: later, source: testSource, dualPublishDays: 30 });
    const { tx, rows } = fakeTx();
    const courseId = newId('course');
    const base = { ...courseEmit(newId('tenant'), courseId), eventType: 'catalog.course.archived' };
    await producer.emit(tx, { ...base, payload: { courseId, reason: 'x' } });
    await producer.emit(tx, { ...base, payloads: { 1: { courseId }, 2: { courseId, reason: 'y' } } });
    expect(rows.map((r) => r.eventVersion)).toEqual([2, 2]);
  });

  it('validates before writing and stamps headers', async () => {
    const producer = createEventProducer({ registry: loadSchemaRegistry(), clock, source: testSource, dualPublishDays: 30 });
    const { tx, rows } = fakeTx();
    const courseId = newId('course');
    const base = { ...courseEmit(newId('tenant'), courseId), eventType: 'catalog.course.archived' };
    await expect(producer.emit(tx, { ...base, payload: { courseId: 'nope' } })).rejects.toMatchObject({
      code: 'schema.invalid_event',
    });
    expect(rows).toEqual([]);
    await producer.emit(tx, { ...base, payload: { courseId }, headers: { 'x-request-id': 'r1' } });
    expect(rows[0].headers).toEqual({
      'x-request-id': 'r1',
      'Content-Type': 'application/json',
      traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/),
    });
    expect(rows[0]).toMatchObject({ partitionKey: courseId, eventType: 'catalog.course.archived', eventVersion: 1 });
  });
});
