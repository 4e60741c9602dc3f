import type { MessageBus } from '../../../events/bus/event-bus.js';
import { systemClock, type Clock } from '../../../platform/clock.js';
import { subjectFor, type EventSource } from '../../../events/envelope.js';
import type { EventProducer } from '../../../events/publish/outbox.js';
import { completeEnvelope, type EnvelopeDraft } from '../../../events/publish/publish.logic.js';
import type { SchemaRegistry } from '../../../events/schemas/registry.js';
import type { Db } from '../../../platform/db/database.js';
import { AppError } from '../../../platform/errors/errors.js';
import type { Logger } from '../../../platform/observability/logger.js';
import { CATALOG_DURABLES } from '../consumers.js';
import { createCatalogEvents } from '../outbox-port.js';
import { publishTaxonomy } from '../use-cases/publish-taxonomy.js';
import { DEMO_TENANT_ID, demoEventDrafts, DEMO_TAXONOMY } from './demo-catalog.data.js';

export { DEMO_TENANT_ID };

export interface DemoCatalogDeps {
  db: Db;
  /** Only publishes: the demo's content events go where a content service would put them. */
  bus: Pick<MessageBus, 'publish'>;
  registry: SchemaRegistry;
  /** The event worker's producer (for the taxonomy, published the way the admin mutation does). */
  producer: EventProducer;
  logger: Logger;
  source: EventSource;
  clock?: Clock;
  /** Wakes the outbox relay after the taxonomy's event is written. */
  afterCommit?: () => void;
  /** How long to wait for the consumers to apply the demo events (default 30 s). */
  timeoutMs?: number;
}

/**
 * The demo catalog of the README's tenant, made the way real data is made: the taxonomy through
 * the publishTaxonomy use case (as an admin would), the courses and versions as authoring and
 * content events published on the bus, so the catalog's consumers build them exactly as they
 * would from the producers. Idempotent across restarts: the events have fixed ids (the inbox
 * skips them the second time) and the taxonomy is published only while it has no version.
 * Resolves once the consumers applied every event (or after `timeoutMs`, logged).
 */
export async function publishDemoCatalog(deps: DemoCatalogDeps): Promise<{ events: number; applied: boolean }> {
  const clock = deps.clock ?? systemClock;
  const taxonomyId = await ensureDemoTaxonomy(deps, clock.now());
  const drafts = demoEventDrafts(taxonomyId);
  for (const draft of drafts) {
    const envelope = completeEnvelope(draft, {
      registry: deps.registry,
      now: clock.now(),
      newId: () => draft.eventId!,
      source: deps.source,
    });
    await deps.bus.publish(subjectFor(envelope.eventType, envelope.eventVersion), Buffer.from(JSON.stringify(envelope)), {
      msgId: envelope.eventId,
      headers: { 'Content-Type': 'application/json' },
    });
  }
  const applied = await allApplied(deps, drafts);
  if (applied) deps.logger.info({ tenantId: DEMO_TENANT_ID, events: drafts.length }, 'demo catalog in place');
  else deps.logger.warn({ tenantId: DEMO_TENANT_ID }, 'demo catalog events published but not all applied yet');
  return { events: drafts.length, applied };
}

async function ensureDemoTaxonomy(deps: DemoCatalogDeps, now: Date): Promise<string> {
  const existing = await deps.db.taxonomy.findFirst({
    where: { tenantId: DEMO_TENANT_ID, namespace: DEMO_TAXONOMY.namespace, version: { gt: 0 } },
  });
  if (existing) return existing.id;
  const events = createCatalogEvents(deps.producer);
  try {
    const taxonomy = await deps.db.$transaction((tx) =>
      publishTaxonomy(
        {
          tx,
          tenantId: DEMO_TENANT_ID,
          actor: { type: 'system', id: 'demo-catalog' },
          events: events.forRequest(tx, { correlationId: 'demo-catalog' }),
          now,
          requestId: 'demo-catalog',
          gdprZeroingRetentionClasses: [],
        },
        { namespace: DEMO_TAXONOMY.namespace, expectedVersion: 0, ifMatch: undefined, diff: DEMO_TAXONOMY.diff },
      ),
    );
    deps.afterCommit?.();
    return taxonomy.id;
  } catch (error) {
    // Another process published it first: use theirs.
    if (!(error instanceof AppError && error.code === 'request.conflict')) throw error;
    return (await deps.db.taxonomy.findFirstOrThrow({ where: { tenantId: DEMO_TENANT_ID, namespace: DEMO_TAXONOMY.namespace } }))
      .id;
  }
}

const DURABLE_BY_TYPE: Record<string, string> = {
  'content.play_package.built': CATALOG_DURABLES.playPackageBuilt,
  'authoring.course_draft.published': CATALOG_DURABLES.courseDraftPublished,
};

async function allApplied(deps: DemoCatalogDeps, drafts: readonly EnvelopeDraft[]): Promise<boolean> {
  const deadline = Date.now() + (deps.timeoutMs ?? 30_000);
  for (;;) {
    const handled = await deps.db.inboxEvent.count({
      where: { OR: drafts.map((d) => ({ consumer: DURABLE_BY_TYPE[d.eventType], tenantId: d.tenantId, eventId: d.eventId })) },
    });
    if (handled === drafts.length) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
