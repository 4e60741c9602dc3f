import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventEnvelope } from '../../../events/envelope.js';
import { ERASED_USER_ID, newId } from '../../../platform/ids.js';
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

const NAME = 'Wendy Erased';
const HELD = 'held-course';

/**
 * Erasure reaches every copy of the subject's id the catalog holds or emits where the retention
 * class permits zeroing: course authors, the versions it published (rows, `publishedBy` in
 * answers), taxonomies it published, the stored event history (payloads and actors, published or
 * not), the erasure record itself, and whatever arrives after the erasure naming it (as author,
 * publisher or actor).
 */
describe.each(stacks())('GDPR erasure of every copy: $name', (stack) => {
  let h: CatalogHarness;
  let client: CatalogClient;
  const tenant = newId('tenant');
  const w = newId('user');
  const bob = { userId: newId('user'), role: 'reviewer', displayName: 'Bob' };
  const wAuthor = { userId: w, role: 'author', displayName: NAME };

  /** A built event as the spec shows it: no publishedBy (the first author publishes). */
  const specBuilt = (slug: string, label: string, overrides: Record<string, unknown> = {}) => {
    const { publishedBy: _none, ...payload } = builtPayload(tenant, slug, label, { authors: [wAuthor], ...overrides });
    return consumedEnvelope('built', payload);
  };
  const course = (slug: string) => h.db.prisma.course.findUniqueOrThrow({ where: { tenantId_slug: { tenantId: tenant, slug } } });

  /**
   * Where `needle` occurs in the rows of the tenant the catalog keeps, as `table:key` (the held
   * course's rows, whose retention class does not permit zeroing, apart).
   */
  async function copiesOf(needle: string): Promise<{ permitted: string[]; held: string[] }> {
    const heldId = (await course(HELD)).id;
    const prisma = h.db.prisma;
    const where = { tenantId: tenant };
    const tables: Record<string, Array<Record<string, unknown>>> = {
      Course: await prisma.course.findMany({ where }),
      CourseVersion: await prisma.courseVersion.findMany({ where }),
      Taxonomy: await prisma.taxonomy.findMany({ where }),
      TaxonomyVersion: await prisma.taxonomyVersion.findMany({ where }),
      OutboxEvent: await prisma.outboxEvent.findMany({ where }),
      ErasedAuthor: await prisma.erasedAuthor.findMany({ where }),
    };
    const found = { permitted: [] as string[], held: [] as string[] };
    for (const [table, rows] of Object.entries(tables)) {
      for (const row of rows) {
        const text = JSON.stringify(row, (_key, value) => (typeof value === 'bigint' ? String(value) : (value as unknown)));
        if (!text.includes(needle)) continue;
        const held = [row.id, row.courseId, row.partitionKey].includes(heldId);
        found[held ? 'held' : 'permitted'].push(`${table}:${String(row.eventType ?? row.id ?? row.taxonomyId ?? '')}`);
      }
    }
    return found;
  }

  beforeAll(async () => {
    h = await startCatalogHarness(stack);
    client = await startCatalogClient(h.db.prisma);
    await h.send(consumedEnvelope('draft', draftPayload(tenant, 'erased-course', { authors: [wAuthor, bob] })));
    await h.send(consumedEnvelope('draft', draftPayload(tenant, HELD, { authors: [wAuthor] })));
    await h.settled();
    // A retention class that does not permit zeroing (the policy table permits only `operational`).
    await h.db.prisma.course.update({ where: { id: (await course(HELD)).id }, data: { retentionClass: 'legal_hold' } });
    await h.send(specBuilt('erased-course', '1.0.0'));
    await h.send(specBuilt(HELD, '1.0.0'));
    await h.send(consumedEnvelope('built', builtPayload(tenant, 'published-by-w', '1.0.0', { publishedBy: w, authors: [bob] })));
    await h.settled();
    // W acted as an admin: the events' actor, and the taxonomy version's author.
    const erased = await course('erased-course');
    await client.data(
      'mutation($id: ID!) { changeCourseVisibility(courseId: $id, to: "marketplace", reason: "launch") { visibility } }',
      { id: erased.id },
      { tenantId: tenant, subject: w },
    );
    await client.data(
      'mutation($input: PublishTaxonomyInput!) { publishTaxonomy(input: $input) { version } }',
      { input: { namespace: 'clinical', diff: { added: [{ path: 'sepsis', label: { en: 'Sepsis' } }] } } },
      { tenantId: tenant, subject: w },
    );
    // The relay sent everything so far: the rows are the 13-month archive now.
    await h.db.prisma.outboxEvent.updateMany({ where: { tenantId: tenant }, data: { publishedAt: new Date() } });
    expect((await copiesOf(w)).permitted.length).toBeGreaterThan(4);

    await h.send(consumedEnvelope('gdpr', gdprPayload(tenant, w, 'erasure')));
    await h.settled();
  });
  afterAll(async () => {
    await client?.close();
    await h?.stop();
  });

  it('leaves no copy of the id or the name in any row of the tenant whose retention class permits zeroing', async () => {
    const ids = await copiesOf(w);
    expect(ids.permitted).toEqual([]);
    expect((await copiesOf(ERASED_USER_ID)).permitted.length).toBeGreaterThan(4);
    // The held course keeps the id (its class does not permit zeroing), never the name.
    expect(ids.held).toEqual(expect.arrayContaining(['Course:' + (await course(HELD)).id]));
    expect(ids.held.some((copy) => copy.startsWith('CourseVersion:'))).toBe(true);
    expect(await copiesOf(NAME)).toEqual({ permitted: [], held: [] });
  });

  it('answers the zero id for the versions W published and the taxonomy W published', async () => {
    const versions = await h.db.prisma.courseVersion.findMany({ where: { tenantId: tenant }, include: { course: true } });
    for (const version of versions) {
      const answer = await client.data(
        'query($id: ID!) { courseVersion(courseVersionId: $id) { publishedBy course { authors { userId displayName } } } }',
        { id: version.id },
        { tenantId: tenant },
      );
      const expected = version.course.slug === HELD ? w : ERASED_USER_ID;
      expect((answer.courseVersion as { publishedBy: string }).publishedBy, version.course.slug).toBe(expected);
      expect(JSON.stringify(answer)).not.toContain(NAME);
    }
    const [taxonomyVersion] = await h.db.prisma.taxonomyVersion.findMany({ where: { tenantId: tenant } });
    expect(taxonomyVersion.createdBy).toBe(ERASED_USER_ID);
  });

  it('zeroes W in what arrives later: as the first author, as publishedBy and as the actor of a built event', async () => {
    const afterwards = specBuilt('erased-course', '1.1.0');
    const asPublisher = consumedEnvelope('built', builtPayload(tenant, 'later-course', '1.0.0', { publishedBy: w }));
    const { publishedBy: _none, ...noPublisher } = builtPayload(tenant, 'actor-course', '1.0.0');
    const asActor: EventEnvelope = { ...consumedEnvelope('built', noPublisher), actor: { type: 'user', id: w } };
    for (const envelope of [afterwards, asPublisher, asActor]) await h.send(envelope);
    await h.send(specBuilt(HELD, '1.1.0'));
    await h.settled();

    for (const slug of ['erased-course', 'later-course', 'actor-course']) {
      const versions = await h.db.prisma.courseVersion.findMany({ where: { courseId: (await course(slug)).id } });
      expect(
        versions.map((v) => v.publishedBy),
        slug,
      ).toEqual(versions.map(() => ERASED_USER_ID));
    }
    for (const slug of ['later-course', 'actor-course']) {
      const [event] = await h.db.prisma.outboxEvent.findMany({
        where: { partitionKey: (await course(slug)).id, eventType: 'catalog.course_version.published' },
      });
      expect((event.envelope as unknown as EventEnvelope<{ publishedBy: string }>).payload.publishedBy, slug).toBe(
        ERASED_USER_ID,
      );
    }
    expect((await copiesOf(w)).permitted).toEqual([]);
    expect(await copiesOf(NAME)).toEqual({ permitted: [], held: [] });
  });
});
