import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventEnvelope } from '../../../events/envelope.js';
import { newId } from '../../../platform/ids.js';
import { ETAG_FIELDS } from '../../../subgraphs/catalog/course/course-etag.logic.js';
import { stacks } from '../events/helpers.js';
import {
  builtPayload,
  consumedEnvelope,
  draftPayload,
  gdprPayload,
  startCatalogHarness,
  type CatalogHarness,
} from './harness.js';
import { startCatalogClient, type CatalogClient } from './subgraph-client.js';

const SLUG = 'etag-walk';

/**
 * Every mutation and every consumed event that changes a course, in one course's life: the etag
 * moves whenever a field a reader sees moves (metadata, visibility, state, latest version, source
 * draft), the GraphQL answer shows the stored tag, and a `metadata_updated` carries the tag the
 * course has once its event is applied. Writes that change no field of the course (a version that
 * does not become latest, a repeated package, a version's own lifecycle) leave it.
 */
describe.each(stacks())('course etag: $name', (stack) => {
  let h: CatalogHarness;
  let client: CatalogClient;
  const tenant = newId('tenant');
  const author = { userId: newId('user'), role: 'author', displayName: 'Ada' };
  const repeated = builtPayload(tenant, SLUG, '1.0.0');

  beforeAll(async () => {
    h = await startCatalogHarness(stack);
    client = await startCatalogClient(h.db.prisma);
    await h.send(consumedEnvelope('draft', draftPayload(tenant, SLUG, { authors: [author] })));
    await h.settled();
  });
  afterAll(async () => {
    await client?.close();
    await h?.stop();
  });

  const course = () => h.db.prisma.course.findUniqueOrThrow({ where: { tenantId_slug: { tenantId: tenant, slug: SLUG } } });
  const consumed = async (envelope: EventEnvelope) => {
    await h.send(envelope);
    await h.settled();
  };
  const mutate = async (query: string, variables: Record<string, unknown> = {}, ifMatch?: string) => {
    await client.data(query, { id: (await course()).id, ...variables }, { tenantId: tenant, ifMatch });
  };
  const firstVersionId = async () =>
    (await h.db.prisma.courseVersion.findFirstOrThrow({ where: { courseId: (await course()).id, versionLabel: '1.0.0' } })).id;
  const later = () => ({ occurredAt: new Date(Date.now() + 60_000).toISOString() });

  const steps: Array<{ step: string; moves: boolean; run: () => Promise<void> }> = [
    {
      step: 'draft event changing the title',
      moves: true,
      run: () => consumed(consumedEnvelope('draft', draftPayload(tenant, SLUG, { title: { en: 'Walk 2' } }), later())),
    },
    {
      step: 'draft event changing only the source draft',
      moves: true,
      run: () => consumed(consumedEnvelope('draft', draftPayload(tenant, SLUG, { title: { en: 'Walk 2' } }), later())),
    },
    {
      step: 'draft event changing the visibility',
      moves: true,
      run: () =>
        consumed(
          consumedEnvelope(
            'draft',
            draftPayload(tenant, SLUG, { title: { en: 'Walk 2' } }, { visibility: 'marketplace' }),
            later(),
          ),
        ),
    },
    {
      step: 'built event publishing the first version (latest)',
      moves: true,
      run: () => consumed(consumedEnvelope('built', repeated)),
    },
    {
      step: 'built event publishing a higher version (latest)',
      moves: true,
      run: () => consumed(consumedEnvelope('built', builtPayload(tenant, SLUG, '1.1.0'))),
    },
    {
      step: 'built event publishing a lower version (not latest: no course field changes)',
      moves: false,
      run: () => consumed(consumedEnvelope('built', builtPayload(tenant, SLUG, '0.9.0'))),
    },
    {
      step: 'built event repeating a package (nothing changes)',
      moves: false,
      run: () => consumed(consumedEnvelope('built', repeated)),
    },
    {
      step: 'updateCourseMetadata',
      moves: true,
      run: async () =>
        mutate(
          'mutation($id: ID!, $tags: [String!]) { updateCourseMetadata(courseId: $id, input: { tags: $tags }) { etag } }',
          { tags: ['walk'] },
          (await course()).etag,
        ),
    },
    {
      step: 'changeCourseVisibility marketplace -> org',
      moves: true,
      run: () => mutate('mutation($id: ID!) { changeCourseVisibility(courseId: $id, to: "org", reason: "pilot") { etag } }'),
    },
    {
      step: 'changeCourseVisibility org -> marketplace',
      moves: true,
      run: () =>
        mutate('mutation($id: ID!) { changeCourseVisibility(courseId: $id, to: "marketplace", reason: "launch") { etag } }'),
    },
    {
      step: 'deprecateCourseVersion (the version changes, not the course)',
      moves: false,
      run: async () => {
        const v = await firstVersionId();
        await client.data(
          'mutation($v: ID!) { deprecateCourseVersion(courseVersionId: $v, reason: "old") { state } }',
          { v },
          { tenantId: tenant },
        );
      },
    },
    {
      step: 'GDPR access request redacting an author',
      moves: true,
      run: () => consumed(consumedEnvelope('gdpr', gdprPayload(tenant, author.userId, 'access'))),
    },
    {
      step: 'GDPR erasure zeroing the author',
      moves: true,
      run: () => consumed(consumedEnvelope('gdpr', gdprPayload(tenant, author.userId, 'erasure'))),
    },
    {
      step: 'archiveCourse',
      moves: true,
      run: () => mutate('mutation($id: ID!) { archiveCourse(courseId: $id, reason: "retired") { etag } }'),
    },
  ];

  it('covers every field of the GraphQL Course that can change, but its timestamps and what is derived or its own entity', async () => {
    const answer = await client.data('{ __type(name: "Course") { fields { name } } }', {}, { tenantId: tenant });
    const fields = (answer.__type as { fields: Array<{ name: string }> }).fields.map((f) => f.name);
    const notInTag: Record<string, string> = {
      courseId: 'never changes (a tag is only compared with tags of the same course)',
      tenantId: 'never changes',
      slug: 'never changes',
      etag: 'the tag itself',
      createdAt: 'timestamp',
      updatedAt: 'timestamp',
      localizedTitle: 'derived from title and Accept-Language',
      localizedDescription: 'derived from description and Accept-Language',
      versions: 'versions are their own entities (the latest label is covered)',
    };
    expect(fields.filter((field) => !(field in notInTag)).sort()).toEqual([...ETAG_FIELDS].sort());
  });

  it('moves with every change a reader can see, and only then, in GraphQL and in the events', async () => {
    for (const { step, moves, run } of steps) {
      const before = await course();
      const lastEvent = (await h.db.prisma.outboxEvent.findFirst({ orderBy: { id: 'desc' } }))?.id ?? 0n;
      await run();
      const after = await course();
      if (moves) expect(after.etag, step).not.toBe(before.etag);
      else expect(after.etag, step).toBe(before.etag);

      const answer = await client.data(
        'query($id: ID!) { course(courseId: $id) { etag } }',
        { id: after.id },
        { tenantId: tenant },
      );
      expect((answer.course as { etag: string }).etag, step).toBe(after.etag);
      const updates = await h.db.prisma.outboxEvent.findMany({
        where: { partitionKey: after.id, eventType: 'catalog.course.metadata_updated', id: { gt: lastEvent } },
      });
      for (const update of updates)
        expect((update.envelope as { payload: { etag: string } }).payload.etag, step).toBe(after.etag);
    }
    expect((await course()).state).toBe('archived');
  });
});
