import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../platform/ids.js';
import type { EventEnvelope } from '../../../events/envelope.js';
import { stacks } from '../events/helpers.js';
import {
  builtPayload,
  consumedEnvelope,
  CONSUMED_TRACEPARENT,
  draftPayload,
  registry,
  startCatalogHarness,
  TRACE_ID,
  type CatalogHarness,
} from './harness.js';

/**
 * The catalog's consumers, run by the events runner over the in-process bus + PGlite, and over
 * JetStream + Postgres when NATS_URL and DATABASE_URL are set.
 */
describe.each(stacks())('catalog consumers: $name', (stack) => {
  let h: CatalogHarness;
  beforeAll(async () => {
    h = await startCatalogHarness(stack);
  });
  afterAll(async () => h?.stop());

  const outboxOf = async (partitionKey: string) =>
    (await h.db.prisma.outboxEvent.findMany({ where: { partitionKey }, orderBy: { id: 'asc' } })).map((row) => ({
      row,
      envelope: row.envelope as unknown as EventEnvelope,
      headers: row.headers as Record<string, string>,
    }));
  const courseBySlug = (tenantId: string, slug: string) =>
    h.db.prisma.course.findUniqueOrThrow({ where: { tenantId_slug: { tenantId, slug } } });
  const versionsOf = (courseId: string) =>
    h.db.prisma.courseVersion.findMany({ where: { courseId }, orderBy: { sequence: 'asc' } });

  it('registers a new slug and publishes its first version, with envelopes as the spec describes', async () => {
    const tenantId = newId('tenant');
    const built = consumedEnvelope(
      'built',
      builtPayload(tenantId, 'hand-hygiene', '1.0.0', { tags: ['ipc'], description: { en: 'Wash' } }),
    );
    await h.send(built);
    await h.settled();

    const course = await courseBySlug(tenantId, 'hand-hygiene');
    expect(course).toMatchObject({
      title: { en: 'hand-hygiene (package)' },
      description: { en: 'Wash' },
      tags: ['ipc'],
      state: 'registered',
      visibility: 'org',
      versionSeq: 1,
      latestVersionLabel: '1.0.0',
      sourceDraftId: built.payload.courseDraftId,
      retentionClass: 'operational',
      dataResidency: 'EU',
    });
    expect(course.etag).toMatch(/^"[0-9a-f]{64}"$/);
    const [version] = await versionsOf(course.id);
    expect(version).toMatchObject({
      versionLabel: '1.0.0',
      major: 1,
      minor: 0,
      patch: 0,
      sequence: 1,
      becameLatest: true,
      state: 'published',
      sourceEventId: built.eventId,
    });

    const events = await outboxOf(course.id);
    expect(events.map((e) => e.row.subject)).toEqual(['catalog.course.registered.v1', 'catalog.course_version.published.v1']);
    for (const { envelope, row, headers } of events) {
      registry.validateEnvelope(envelope);
      registry.validate(envelope.eventType, envelope.eventVersion, envelope.payload, 'produce');
      expect(envelope).toMatchObject({
        eventVersion: 1,
        tenantId,
        partitionKey: course.id,
        causationId: built.eventId,
        correlationId: built.correlationId,
        actor: { type: 'system', id: 'catalog-svc' },
        retentionClass: 'operational',
        dataResidency: 'EU',
        source: { service: 'catalog' },
      });
      expect(envelope.schemaUri).toMatch(
        new RegExp(`^schemas://catalog/${envelope.eventType.split('.').slice(1).join('/')}/v1#sha256-[0-9a-f]{64}$`),
      );
      expect(row.eventId).toBe(envelope.eventId);
      expect(headers.traceparent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
      expect(headers.traceparent).not.toBe(CONSUMED_TRACEPARENT);
    }
    expect(events[0].envelope.payload).toEqual({
      courseId: course.id,
      slug: 'hand-hygiene',
      title: { en: 'hand-hygiene (package)' },
      defaultLocale: 'en',
      visibility: 'org',
      authors: [],
      taxonomy: [],
      sourceDraftId: built.payload.courseDraftId,
    });
    expect(events[1].envelope.payload).toEqual({
      courseVersionId: version.id,
      courseId: course.id,
      versionLabel: '1.0.0',
      publishedBy: built.payload.publishedBy,
      durationMinutes: 30,
      locales: ['en'],
      playPackage: built.payload.playPackage,
      becameLatest: true,
    });
    expect(events[1].headers['x-course-version-seq']).toBe('1');
  });

  it('applies a built event delivered twice once: one version, one set of events, one inbox row', async () => {
    const tenantId = newId('tenant');
    const built = consumedEnvelope('built', builtPayload(tenantId, 'sepsis', '2.1.0'));
    await h.send(built, `${built.eventId}-a`);
    await h.send(built, `${built.eventId}-b`);
    await h.settled();
    const course = await courseBySlug(tenantId, 'sepsis');
    expect(await versionsOf(course.id)).toHaveLength(1);
    expect((await outboxOf(course.id)).map((e) => e.envelope.eventType)).toEqual([
      'catalog.course.registered',
      'catalog.course_version.published',
    ]);
    expect(await h.db.prisma.inboxEvent.count({ where: { eventId: built.eventId } })).toBe(1);
  });

  it('treats the same package re-announced as a no-op and dead-letters a different package for a published label', async () => {
    const tenantId = newId('tenant');
    const first = builtPayload(tenantId, 'triage', '1.0.0');
    await h.send(consumedEnvelope('built', first));
    await h.settled();
    const deadBefore = h.stats().deadLettered;
    await h.send(consumedEnvelope('built', { ...first, courseDraftId: newId('courseDraft') }));
    await h.send(consumedEnvelope('built', { ...first, playPackage: { ...first.playPackage, sha256: 'd'.repeat(64) } }));
    await h.settled();
    const course = await courseBySlug(tenantId, 'triage');
    expect(await versionsOf(course.id)).toHaveLength(1);
    expect(h.stats().deadLettered).toBe(deadBefore + 1);
    expect((await outboxOf(course.id)).filter((e) => e.envelope.eventType === 'catalog.course_version.published')).toHaveLength(
      1,
    );
  });

  it('decides becameLatest by semantic version, not by arrival, with a gap-free sequence', async () => {
    const tenantId = newId('tenant');
    for (const label of ['1.0.0', '1.10.0', '1.2.0', '2.0.0', '0.9.0']) {
      await h.send(
        consumedEnvelope(
          'built',
          builtPayload(tenantId, 'ecg', label, {
            playPackage: { playPackageId: newId('playPackage'), sha256: 'e'.repeat(64), format: 'v1' },
          }),
        ),
      );
    }
    await h.settled();
    const course = await courseBySlug(tenantId, 'ecg');
    const versions = await versionsOf(course.id);
    expect(versions.map((v) => [v.versionLabel, v.sequence, v.becameLatest])).toEqual([
      ['1.0.0', 1, true],
      ['1.10.0', 2, true],
      ['1.2.0', 3, false],
      ['2.0.0', 4, true],
      ['0.9.0', 5, false],
    ]);
    expect(course).toMatchObject({ latestVersionLabel: '2.0.0', versionSeq: 5 });
    const published = (await outboxOf(course.id)).filter((e) => e.envelope.eventType === 'catalog.course_version.published');
    expect(
      published.map((e) => [e.headers['x-course-version-seq'], (e.envelope.payload as { becameLatest: boolean }).becameLatest]),
    ).toEqual([
      ['1', true],
      ['2', true],
      ['3', false],
      ['4', true],
      ['5', false],
    ]);
  });

  it('ends in the same course whether the draft or the built event comes first', async () => {
    const [tenantA, tenantB] = [newId('tenant'), newId('tenant')];
    const author = { userId: newId('user'), role: 'author', displayName: 'Dr. Ada' };
    const taxonomyRef = { taxonomyId: newId('taxonomy'), nodePath: 'clinical/icu' };
    const draftAt = '2026-11-20T10:00:00.000Z';
    const builtAt = '2026-11-20T11:00:00.000Z';
    const draft = (tenantId: string) =>
      consumedEnvelope(
        'draft',
        draftPayload(
          tenantId,
          'icu-basics',
          { title: { en: 'ICU basics' }, description: { en: 'From the draft' }, authors: [author], taxonomy: [taxonomyRef] },
          { visibility: 'marketplace' },
        ),
        { occurredAt: draftAt },
      );
    // The package, built later, still carries an older title and adds tags and a cover.
    const built = (tenantId: string) =>
      consumedEnvelope(
        'built',
        builtPayload(tenantId, 'icu-basics', '1.0.0', {
          title: { en: 'ICU basics (old title)' },
          tags: ['icu'],
          cover: { assetId: 'med_01HZX3K7Q8W9E2R4T6Y8V0A1BP' },
          authors: [{ userId: author.userId }],
        }),
        { occurredAt: builtAt },
      );
    await h.send(draft(tenantA));
    await h.settled();
    expect(await versionsOf((await courseBySlug(tenantA, 'icu-basics')).id)).toEqual([]);
    await h.send(built(tenantA));
    await h.send(built(tenantB));
    await h.settled();
    await h.send(draft(tenantB));
    await h.settled();

    const comparable = async (tenantId: string) => {
      const course = await courseBySlug(tenantId, 'icu-basics');
      const provenance = Object.fromEntries(
        Object.entries(course.metadataProvenance as Record<string, { source: string; at: string }>).map(([field, stamp]) => [
          field,
          [stamp.source, stamp.at],
        ]),
      );
      const versions = (await versionsOf(course.id)).map((v) => [v.versionLabel, v.sequence, v.becameLatest, v.state]);
      const fields = [
        'title',
        'description',
        'defaultLocale',
        'authors',
        'taxonomy',
        'tags',
        'cover',
        'visibility',
        'etag',
        'state',
        'latestVersionLabel',
        'versionSeq',
      ] as const;
      return { ...Object.fromEntries(fields.map((field) => [field, course[field]])), provenance, versions };
    };
    const a = await comparable(tenantA);
    expect(await comparable(tenantB)).toEqual(a);
    expect(a).toMatchObject({
      title: { en: 'ICU basics' },
      description: { en: 'From the draft' },
      authors: [author],
      taxonomy: [taxonomyRef],
      tags: ['icu'],
      cover: { assetId: 'med_01HZX3K7Q8W9E2R4T6Y8V0A1BP' },
      visibility: 'marketplace',
      versions: [['1.0.0', 1, true, 'published']],
    });
  });

  it('updates metadata from a later draft and emits metadata_updated and visibility_changed; an older draft changes nothing', async () => {
    const tenantId = newId('tenant');
    await h.send(consumedEnvelope('built', builtPayload(tenantId, 'burns', '1.0.0'), { occurredAt: '2026-11-01T00:00:00.000Z' }));
    await h.settled();
    const before = await courseBySlug(tenantId, 'burns');
    const author = { userId: newId('user'), role: 'author', displayName: 'Grace' };
    const draft = consumedEnvelope(
      'draft',
      draftPayload(
        tenantId,
        'burns',
        { title: { en: 'Burns care' }, authors: [author] },
        { visibility: 'marketplace', tags: ['wound'] },
      ),
      { occurredAt: '2026-11-02T00:00:00.000Z' },
    );
    await h.send(draft);
    await h.send(
      consumedEnvelope('draft', draftPayload(tenantId, 'burns', { title: { en: 'Stale draft' } }, { visibility: 'org' }), {
        occurredAt: '2026-10-01T00:00:00.000Z',
      }),
    );
    await h.settled();

    const after = await courseBySlug(tenantId, 'burns');
    expect(after).toMatchObject({
      title: { en: 'Burns care' },
      authors: [author],
      tags: ['wound'],
      visibility: 'marketplace',
      sourceDraftId: draft.payload.courseDraftId,
    });
    expect(after.etag).not.toBe(before.etag);
    const events = (await outboxOf(before.id)).filter((e) => e.envelope.causationId === draft.eventId);
    expect(events.map((e) => e.envelope.eventType)).toEqual([
      'catalog.course.metadata_updated',
      'catalog.course.visibility_changed',
    ]);
    expect(events[0].envelope.payload).toEqual({
      courseId: before.id,
      changedFields: ['title', 'authors', 'tags'],
      previous: { title: { en: 'burns (package)' }, authors: [], tags: [] },
      next: { title: { en: 'Burns care' }, authors: [author], tags: ['wound'] },
      etag: after.etag,
    });
    expect(events[1].envelope.payload).toMatchObject({ courseId: before.id, from: 'org', to: 'marketplace' });
    for (const { envelope } of events) registry.validate(envelope.eventType, 1, envelope.payload, 'produce');
    expect((await outboxOf(before.id)).filter((e) => e.envelope.eventType === 'catalog.course.metadata_updated')).toHaveLength(1);
    expect(await versionsOf(before.id)).toHaveLength(1);
  });

  it('dead-letters an event whose payload names another tenant than its envelope, at once', async () => {
    const [tenantId, other] = [newId('tenant'), newId('tenant')];
    const deadBefore = h.stats().deadLettered;
    await h.send(consumedEnvelope('built', builtPayload(other, 'mixup', '1.0.0'), { tenantId }));
    await h.settled();
    expect(h.stats().deadLettered).toBe(deadBefore + 1);
    expect(await h.db.prisma.course.count({ where: { slug: 'mixup' } })).toBe(0);
  });
});
