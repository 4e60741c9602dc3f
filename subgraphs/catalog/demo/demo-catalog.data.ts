import type { EnvelopeDraft } from '../../../events/publish/publish.logic.js';
import type { TaxonomyDiff } from '../taxonomy/taxonomy.logic.js';

/** The tenant of the README's first query. */
export const DEMO_TENANT_ID = 'ten_01JD0000000000000000000000';

/** One taxonomy, published through the admin use case. */
export const DEMO_TAXONOMY: { namespace: string; diff: TaxonomyDiff } = {
  namespace: 'clinical',
  diff: {
    added: [
      { path: 'clinical', label: { en: 'Clinical practice', de: 'Klinische Praxis' } },
      { path: 'clinical/infection', label: { en: 'Infection prevention', de: 'Infektionsprävention' } },
      { path: 'clinical/emergency', label: { en: 'Emergency care', de: 'Notfallversorgung' } },
    ],
    removed: [],
    moved: [],
    renamed: [],
  },
};

const id = (prefix: string, suffix: string) => `${prefix}_01JDDEM${'0'.repeat(19 - suffix.length)}${suffix}`;
const ADA = { userId: id('usr', 'A1'), role: 'author', displayName: 'Dr. Ada Okafor' };
const LENA = { userId: id('usr', 'A2'), role: 'reviewer', displayName: 'Dr. Lena Brandt' };
const GRACE = { userId: id('usr', 'A3'), role: 'author', displayName: 'Grace Mensah' };

const envelope = { retentionClass: 'operational', dataResidency: 'EU', eventVersion: 1 } as const;

/** A consumed event as its producer announces it. */
function announced(
  eventType: 'authoring.course_draft.published' | 'content.play_package.built',
  eventId: string,
  occurredAt: string,
  payload: Record<string, unknown>,
): EnvelopeDraft {
  const service = eventType.startsWith('authoring.') ? 'authoring-svc' : 'content-svc';
  return {
    ...envelope,
    eventId,
    occurredAt,
    eventType,
    source: { service, instance: 'demo', commit: 'demo' },
    tenantId: DEMO_TENANT_ID,
    actor: { type: 'system', id: service },
    partitionKey: String(payload.courseDraftId),
    payload: { tenantId: DEMO_TENANT_ID, defaultLocale: 'en', ...payload },
  };
}

const draft = (eventId: string, occurredAt: string, payload: Record<string, unknown>) =>
  announced('authoring.course_draft.published', eventId, occurredAt, payload);
const built = (eventId: string, occurredAt: string, payload: Record<string, unknown>) =>
  announced('content.play_package.built', eventId, occurredAt, payload);

const sha = (digit: string) => digit.repeat(64);

/**
 * Three courses as the authoring and content services would announce them (spec-shaped: no
 * `publishedBy`, so the first author with role author publishes): one from a draft and two
 * packages (two versions), one from a draft and a package, one from a package alone. Fixed event
 * ids and times, so publishing them again changes nothing.
 */
export function demoEventDrafts(taxonomyId: string): EnvelopeDraft[] {
  const sepsis = {
    courseDraftId: id('drf', 'D1'),
    slug: 'sepsis-recognition',
    title: { en: 'Recognising sepsis', de: 'Sepsis erkennen' },
    description: { en: 'Early signs of sepsis and the first hour of care.', de: 'Frühe Zeichen und die erste Stunde.' },
    authors: [ADA, LENA],
    taxonomy: [{ taxonomyId, nodePath: 'clinical/infection' }],
  };
  const hygiene = {
    courseDraftId: id('drf', 'D2'),
    slug: 'hand-hygiene',
    title: { en: 'Hand hygiene in practice', fr: "L'hygiène des mains en pratique" },
    description: { en: 'The five moments for hand hygiene, step by step.' },
    authors: [GRACE],
    taxonomy: [{ taxonomyId, nodePath: 'clinical/infection' }],
  };
  const module = (n: number, en: string, de: string, minutes: number) => ({
    id: `m${n}`,
    title: { en, de },
    lessonCount: 3,
    durationMinutes: minutes,
    hasAssessments: n > 1,
  });
  return [
    draft('demo-catalog.sepsis.draft', '2026-03-02T09:00:00.000Z', {
      courseDraftId: sepsis.courseDraftId,
      slug: sepsis.slug,
      metadata: { title: sepsis.title, description: sepsis.description, authors: sepsis.authors, taxonomy: sepsis.taxonomy },
    }),
    built('demo-catalog.sepsis.1.0.0', '2026-03-02T10:00:00.000Z', {
      ...sepsis,
      tags: ['sepsis', 'acute-care'],
      versionLabel: '1.0.0',
      durationMinutes: 40,
      locales: ['en', 'de'],
      moduleSummaries: [module(1, 'Warning signs', 'Warnzeichen', 15), module(2, 'The first hour', 'Die erste Stunde', 25)],
      playPackage: { playPackageId: id('pkg', 'P1'), sha256: sha('1'), format: 'v2' },
    }),
    built('demo-catalog.sepsis.1.1.0', '2026-04-14T10:00:00.000Z', {
      ...sepsis,
      tags: ['sepsis', 'acute-care'],
      versionLabel: '1.1.0',
      durationMinutes: 45,
      locales: ['en', 'de'],
      moduleSummaries: [
        module(1, 'Warning signs', 'Warnzeichen', 15),
        module(2, 'The first hour', 'Die erste Stunde', 25),
        module(3, 'Handover', 'Übergabe', 5),
      ],
      playPackage: { playPackageId: id('pkg', 'P2'), sha256: sha('2'), format: 'v2' },
    }),
    draft('demo-catalog.hygiene.draft', '2026-03-09T09:00:00.000Z', {
      courseDraftId: hygiene.courseDraftId,
      slug: hygiene.slug,
      metadata: { title: hygiene.title, description: hygiene.description, authors: hygiene.authors, taxonomy: hygiene.taxonomy },
    }),
    built('demo-catalog.hygiene.1.0.0', '2026-03-09T10:00:00.000Z', {
      ...hygiene,
      tags: ['ipc'],
      versionLabel: '1.0.0',
      durationMinutes: 20,
      locales: ['en', 'fr'],
      playPackage: { playPackageId: id('pkg', 'P3'), sha256: sha('3'), format: 'v1' },
    }),
    built('demo-catalog.triage.1.0.0', '2026-03-16T10:00:00.000Z', {
      courseDraftId: id('drf', 'D3'),
      slug: 'triage-basics',
      title: { en: 'Triage basics' },
      description: { en: 'Sorting patients by urgency at the front door.' },
      authors: [ADA],
      taxonomy: [{ taxonomyId, nodePath: 'clinical/emergency' }],
      tags: ['triage'],
      versionLabel: '1.0.0',
      durationMinutes: 30,
      locales: ['en'],
      playPackage: { playPackageId: id('pkg', 'P4'), sha256: sha('4'), format: 'v2' },
    }),
  ];
}
