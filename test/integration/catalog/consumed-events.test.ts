import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../platform/ids.js';
import type { EventEnvelope } from '../../../events/envelope.js';
import { stacks } from '../events/helpers.js';
import {
  builtPayload,
  consumedEnvelope,
  CONSUMED_TRACEPARENT,
  draftPayload,
  fixtureDraft,
  fixtureEnvelope,
  registry,
  startCatalogHarness,
  TRACE_ID,
  type CatalogHarness,
} from './harness.js';

/**
 * The catalog's consumers, run by the events runner over the in-process bus + the run's database, and over
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
    // The same draft ids in both tenants: the source draft is part of what the etag covers.
    const [draftId, builtDraftId] = [newId('courseDraft'), newId('courseDraft')];
    const draft = (tenantId: string) =>
      consumedEnvelope(
        'draft',
        draftPayload(
          tenantId,
          'icu-basics',
          { title: { en: 'ICU basics' }, description: { en: 'From the draft' }, authors: [author], taxonomy: [taxonomyRef] },
          { visibility: 'marketplace', courseDraftId: draftId },
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
          courseDraftId: builtDraftId,
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

  it('dead-letters data the database refuses (a NUL in the title: SQLSTATE 22P05) on its first delivery, stack relative', async () => {
    const tenantId = newId('tenant');
    const poisoned = consumedEnvelope(
      'built',
      builtPayload(tenantId, 'nul-title', '1.0.0', { title: { en: 'Hand\u0000hygiene' } }),
    );
    await h.send(poisoned);
    await h.settled();
    const [letter] = (await h.bus.readStream(h.deadLetterStream.stream)).filter(
      (m) => m.headers['x-event-id'] === poisoned.eventId,
    );
    // Retrying cannot change what the database refuses: no redelivery was spent on it.
    expect(letter.headers).toMatchObject({ 'x-retries': '0', 'x-deliveries': '1' });
    expect(letter.headers['x-error']).toMatch(/22P05|Unicode/);
    expect(letter.headers['x-stack']).toContain('(subgraphs/catalog/use-cases/publish-course-version.ts:');
    expect(letter.headers['x-stack']).not.toContain(process.cwd());
    expect(await h.db.prisma.course.count({ where: { tenantId } })).toBe(0);
  });

  it('dead-letters an event whose payload names another tenant than its envelope, at once', async () => {
    const [tenantId, other] = [newId('tenant'), newId('tenant')];
    const deadBefore = h.stats().deadLettered;
    await h.send(consumedEnvelope('built', builtPayload(other, 'mixup', '1.0.0'), { tenantId }));
    await h.settled();
    expect(h.stats().deadLettered).toBe(deadBefore + 1);
    expect(await h.db.prisma.course.count({ where: { slug: 'mixup' } })).toBe(0);
  });

  // -------------------------------------------------------------- as spec-conformant producers send them

  const deadLetterOf = async (eventId: string) =>
    (await h.bus.readStream(h.deadLetterStream.stream)).find((m) => m.headers['x-event-id'] === eventId)?.headers;
  const publishedOf = async (courseId: string) =>
    (await outboxOf(courseId)).filter((e) => e.envelope.eventType === 'catalog.course_version.published');

  it('fixtures carry exactly the payload fields the spec lists for each consumed event', () => {
    const keys = (value: object) => Object.keys(value).sort();
    // Spec, Consumed events: "Payload fields used".
    const builtFields =
      'courseDraftId tenantId slug title description defaultLocale authors taxonomy tags cover versionLabel durationMinutes locales moduleSummaries playPackage';
    expect(keys(fixtureDraft('built').payload)).toEqual(builtFields.split(' ').sort());
    expect(keys((fixtureDraft('built').payload as { playPackage: object }).playPackage)).toEqual([
      'format',
      'playPackageId',
      'sha256',
    ]);
    const draft = fixtureDraft('draft').payload as { metadata: object };
    expect(keys(draft)).toEqual(['courseDraftId', 'defaultLocale', 'metadata', 'slug', 'tenantId']);
    expect(keys(draft.metadata)).toEqual(['authors', 'description', 'taxonomy', 'title']);
    // The spec does not show the GDPR payload: the minimum HandleGdprRequest needs.
    expect(keys(fixtureDraft('gdpr').payload)).toEqual(['requestId', 'requestType', 'subjectId', 'subjectType', 'tenantId']);
    for (const kind of ['built', 'draft', 'gdpr'] as const) {
      expect(Object.keys(fixtureDraft(kind)).filter((k) => ['eventId', 'schemaUri', 'occurredAt'].includes(k))).toEqual([]);
    }
  });

  it('publishes a version from the spec-shaped built event (no publishedBy): the first author with role author published it', async () => {
    const tenantId = newId('tenant');
    const built = fixtureEnvelope('built', tenantId);
    expect(built.payload).not.toHaveProperty('publishedBy');
    await h.send(built);
    await h.settled();
    expect(await deadLetterOf(built.eventId)).toBeUndefined();
    const course = await courseBySlug(tenantId, 'fixture-sepsis-recognition');
    expect(course).toMatchObject({
      title: { en: 'Recognising sepsis', de: 'Sepsis erkennen' },
      tags: ['sepsis', 'acute-care'],
      cover: { assetId: 'med_01JDFXTR0000000000000000M1' },
      latestVersionLabel: '1.0.0',
    });
    const [version] = await versionsOf(course.id);
    // The first author is a reviewer; the author is the second.
    expect(version).toMatchObject({ versionLabel: '1.0.0', publishedBy: 'usr_01JDFXTR0000000000000000A2', becameLatest: true });
    const [published] = await publishedOf(course.id);
    expect(published.envelope.payload).toMatchObject({ publishedBy: 'usr_01JDFXTR0000000000000000A2', locales: ['en', 'de'] });
    registry.validate('catalog.course_version.published', 1, published.envelope.payload, 'produce');
  });

  it('handles the spec-shaped draft and GDPR request events end to end', async () => {
    const tenantId = newId('tenant');
    const draft = fixtureEnvelope('draft', tenantId);
    await h.send(draft);
    await h.settled();
    const course = await courseBySlug(tenantId, 'fixture-hand-hygiene');
    expect(course).toMatchObject({
      title: { en: 'Hand hygiene in practice', fr: "L'hygiène des mains en pratique" },
      authors: [{ userId: 'usr_01JDFXTR0000000000000000A3', role: 'author', displayName: 'Grace Mensah' }],
      sourceDraftId: 'drf_01JDFXTR0000000000000000D1',
    });
    expect(await versionsOf(course.id)).toEqual([]);
    const erasure = fixtureEnvelope('gdpr', tenantId);
    await h.send(erasure);
    await h.settled();
    expect((await courseBySlug(tenantId, 'fixture-hand-hygiene')).authors).toEqual([
      { userId: `usr_${'0'.repeat(26)}`, role: 'author', displayName: '[redacted]' },
    ]);
    const updates = (await outboxOf(course.id)).filter((e) => e.envelope.causationId === erasure.eventId);
    expect(updates.map((e) => (e.envelope.payload as { changedFields: string[] }).changedFields)).toEqual([['authors']]);
  });

  it('takes publishedBy from a user actor, and dead-letters at once a built event that names no publisher', async () => {
    const tenantId = newId('tenant');
    const actorUser = newId('user');
    const byActor = consumedEnvelope('built', builtPayload(tenantId, 'by-actor', '1.0.0', { publishedBy: undefined }));
    byActor.actor = { type: 'user', id: actorUser };
    const nobody = consumedEnvelope(
      'built',
      builtPayload(tenantId, 'by-nobody', '1.0.0', {
        publishedBy: undefined,
        authors: [{ userId: newId('user'), role: 'reviewer', displayName: 'R' }],
      }),
    );
    await h.send(byActor);
    await h.send(nobody);
    await h.settled();
    const [version] = await versionsOf((await courseBySlug(tenantId, 'by-actor')).id);
    expect(version.publishedBy).toBe(actorUser);
    expect(await deadLetterOf(nobody.eventId)).toMatchObject({
      'x-deliveries': '1',
      'x-error': expect.stringMatching(
        /names no publisher: no publishedBy, the actor is not a user \(usr_\) and no author has role "author"/,
      ),
    });
    expect(await h.db.prisma.course.count({ where: { tenantId, slug: 'by-nobody' } })).toBe(0);
  });

  it('reads envelope metadata tolerantly: schemaUri with or without digest, another digest counted, only used members required', async () => {
    const tenantId = newId('tenant');
    const noDigest = consumedEnvelope('built', builtPayload(tenantId, 'no-digest', '1.0.0'));
    noDigest.schemaUri = 'schemas://content/play_package/built/v1';
    const otherDigest = consumedEnvelope('built', builtPayload(tenantId, 'other-digest', '1.0.0'));
    otherDigest.schemaUri = `schemas://content/play_package/built/v1#sha256-${'f'.repeat(64)}`;
    const full = consumedEnvelope('built', builtPayload(tenantId, 'bare', '1.0.0'));
    // Only what the handlers use: id, type, version, tenant, occurredAt, payload.
    const bare = Object.fromEntries(
      Object.entries(full).filter(([k]) =>
        ['eventId', 'eventType', 'eventVersion', 'tenantId', 'occurredAt', 'payload'].includes(k),
      ),
    ) as unknown as typeof full;
    const mismatchesBefore = h.handles.reduce((sum, c) => sum + c.stats().schemaDigestMismatches, 0);
    for (const envelope of [noDigest, otherDigest, bare]) await h.send(envelope);
    await h.settled();
    for (const [slug, envelope] of [
      ['no-digest', noDigest],
      ['other-digest', otherDigest],
      ['bare', bare],
    ] as const) {
      expect(await deadLetterOf(envelope.eventId), slug).toBeUndefined();
      expect(await versionsOf((await courseBySlug(tenantId, slug)).id), slug).toHaveLength(1);
    }
    expect(h.handles.reduce((sum, c) => sum + c.stats().schemaDigestMismatches, 0)).toBe(mismatchesBefore + 1);
    // Emitted events of a consumed event without a correlationId start their own correlation.
    const [published] = await publishedOf((await courseBySlug(tenantId, 'bare')).id);
    expect(published.envelope).toMatchObject({ correlationId: bare.eventId, causationId: bare.eventId });
  });

  it('dead-letters a schemaUri that names another event or version', async () => {
    const tenantId = newId('tenant');
    const wrong = consumedEnvelope('built', builtPayload(tenantId, 'wrong-schema', '1.0.0'));
    wrong.schemaUri = 'schemas://content/play_package/built/v2';
    await h.send(wrong);
    await h.settled();
    expect((await deadLetterOf(wrong.eventId))?.['x-error']).toMatch(
      /schemaUri names schemas:\/\/content\/play_package\/built\/v2/,
    );
  });

  it('dead-letters locale codes the admin rule refuses (CR/LF, in any locale field) at once, storing nothing', async () => {
    const tenantId = newId('tenant');
    const evil = 'en\r\nX-Injected: 1';
    const module = (title: Record<string, string>) => [
      { id: 'm1', title, lessonCount: 1, durationMinutes: 5, hasAssessments: false },
    ];
    const cases = [
      consumedEnvelope('built', builtPayload(tenantId, 'bad-default', '1.0.0', { defaultLocale: evil, title: { [evil]: 'T' } })),
      consumedEnvelope('built', builtPayload(tenantId, 'bad-title', '1.0.0', { title: { en: 'T', [evil]: 'T' } })),
      consumedEnvelope('built', builtPayload(tenantId, 'bad-locales', '1.0.0', { locales: ['en', evil] })),
      consumedEnvelope('built', builtPayload(tenantId, 'bad-changelog', '1.0.0', { changelog: { [evil]: 'c' } })),
      consumedEnvelope('built', builtPayload(tenantId, 'bad-module', '1.0.0', { moduleSummaries: module({ [evil]: 'M' }) })),
      consumedEnvelope('draft', draftPayload(tenantId, 'bad-draft', { description: { [evil]: 'D' } })),
    ];
    for (const envelope of cases) await h.send(envelope);
    await h.settled();
    for (const envelope of cases) {
      const letter = await deadLetterOf(envelope.eventId);
      expect(letter, String(envelope.payload.slug)).toMatchObject({ 'x-deliveries': '1' });
      expect(letter?.['x-error']).toMatch(/which is not a BCP-47 locale code/);
    }
    expect(await h.db.prisma.course.count({ where: { tenantId } })).toBe(0);
  });
});
