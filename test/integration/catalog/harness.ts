import { loadConfig, type Config } from '../../../platform/config/config.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/logger.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { systemClock } from '../../../events/clock.js';
import { startConsumer, type ConsumerHandle, type ConsumerSpec } from '../../../events/consumer-runner.js';
import type { DlqLocation } from '../../../events/dlq.js';
import { buildEnvelope, type EventEnvelope } from '../../../events/envelope.js';
import { createEventProducer, type EventProducer } from '../../../events/outbox.js';
import { loadSchemaRegistry, type SchemaRegistry } from '../../../events/schemas/registry.js';
import { dlqSubjectPrefix, ensureStreams, streamSpecs, type StreamOptions } from '../../../events/streams.js';
import { catalogConsumers } from '../../../subgraphs/catalog/consumers.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { streamEnv, uniqueToken, type Stack } from '../events/helpers.js';

export const registry: SchemaRegistry = loadSchemaRegistry();
export const TRACE_ID = 'a1'.repeat(16);
export const CONSUMED_TRACEPARENT = `00-${TRACE_ID}-${'b2'.repeat(8)}-01`;

export type ConsumedKind = 'built' | 'draft' | 'gdpr';
const EVENT_TYPES: Record<ConsumedKind, string> = {
  built: 'content.play_package.built',
  draft: 'authoring.course_draft.published',
  gdpr: 'gdpr.subject_request.received',
};
const SOURCES: Record<ConsumedKind, string> = { built: 'content-svc', draft: 'authoring-svc', gdpr: 'gdpr-svc' };

/** A consumed event as its producer would send it. */
export function consumedEnvelope(
  kind: ConsumedKind,
  payload: Record<string, unknown>,
  options: { occurredAt?: string; tenantId?: string } = {},
): EventEnvelope {
  return buildEnvelope(
    { clock: systemClock, registry, source: { service: SOURCES[kind], instance: 'i-1', commit: 'c0ffee' } },
    {
      eventType: EVENT_TYPES[kind],
      eventVersion: 1,
      payload,
      tenantId: options.tenantId ?? String(payload.tenantId),
      partitionKey: String(payload.slug ?? payload.requestId),
      actor: { type: 'system', id: SOURCES[kind] },
      retentionClass: 'operational',
      dataResidency: 'EU',
      occurredAt: options.occurredAt,
    },
  );
}

export function builtPayload(tenantId: string, slug: string, versionLabel: string, overrides: Record<string, unknown> = {}) {
  return {
    courseDraftId: newId('courseDraft'),
    tenantId,
    slug,
    title: { en: `${slug} (package)` },
    defaultLocale: 'en',
    versionLabel,
    durationMinutes: 30,
    locales: ['en'],
    playPackage: { playPackageId: newId('playPackage'), sha256: 'c'.repeat(64), format: 'v2' },
    publishedBy: newId('user'),
    ...overrides,
  };
}

export function draftPayload(
  tenantId: string,
  slug: string,
  metadata: Record<string, unknown> = {},
  overrides: Record<string, unknown> = {},
) {
  return {
    courseDraftId: newId('courseDraft'),
    tenantId,
    slug,
    defaultLocale: 'en',
    metadata: { title: { en: `${slug} (draft)` }, ...metadata },
    ...overrides,
  };
}

export function gdprPayload(tenantId: string, subjectId: string, requestType: string, subjectType = 'user') {
  return { requestId: `gdpr-${newId('request')}`, tenantId, subjectType, subjectId, requestType };
}

/** The producer the consumers emit with, as the event worker builds it. */
export function catalogProducer(): EventProducer {
  return createEventProducer({
    registry,
    clock: systemClock,
    source: { service: 'catalog', instance: 'test-1', commit: 'test' },
    dualPublishDays: 30,
  });
}

export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  // Polls a condition on what happened; the timeout only turns a hang into a failure.
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface HarnessOptions {
  /** Consumers per durable: more than one processes messages of one consumer concurrently. */
  replicas?: number;
  /** Runs before the catalog's handler (per event, also in a batch); throwing makes the delivery fail (a broken dependency). */
  intercept?: (envelope: EventEnvelope) => void;
}

/**
 * The catalog's three consumers exactly as `catalogConsumers` declares them, run by the events
 * runner over a bus and a fresh database, on streams of their own.
 */
export async function startCatalogHarness(stack: Stack, options: HarnessOptions = {}) {
  const db: TestDatabase = await createTestDatabase(stack.db);
  const bus: EventBus = await stack.bus.open();
  const token = uniqueToken();
  const config: Config = loadConfig(streamEnv(token));
  const streams: StreamOptions = { subjectPrefix: `${stack.subjectPrefix}p${token}.`, storage: 'memory' };
  await ensureStreams(bus, config, streams);
  const dlq: DlqLocation = { stream: config.events.dlqStream, subjectPrefix: dlqSubjectPrefix(config.events, streams) };
  const producer = catalogProducer();
  const specs = catalogConsumers({
    events: config.events,
    gdprZeroingRetentionClasses: config.gdprZeroingRetentionClasses,
    subjectPrefix: streams.subjectPrefix,
  });
  const handles: ConsumerHandle[] = [];
  for (const spec of specs) {
    const handle: ConsumerSpec['handle'] = async (tx, envelope, ctx) => {
      options.intercept?.(envelope);
      await spec.handle(tx, envelope, ctx);
    };
    // A batch holding a failing event fails whole; the runner then finds it one event at a time.
    const handleBatch: ConsumerSpec['handleBatch'] =
      spec.handleBatch &&
      (async (tx, batch, logger) => {
        for (const { envelope } of batch) options.intercept?.(envelope);
        await spec.handleBatch!(tx, batch, logger);
      });
    for (let i = 0; i < (options.replicas ?? 1); i++) {
      handles.push(
        await startConsumer({
          ...spec,
          handle,
          handleBatch,
          bus,
          db: db.prisma,
          logger: silentLogger,
          registry,
          producer,
          maxDeliver: spec.maxDeliver!,
          ackWaitMs: spec.ackWaitMs!,
          nakDelayMs: () => 20,
          dlq,
        }),
      );
    }
  }
  let sent = 0;
  let msgSeq = 0;
  const outcomes = () => handles.reduce((sum, h) => sum + h.stats().processed + h.stats().duplicates + h.stats().deadLettered, 0);

  return {
    db,
    bus,
    config,
    streams,
    dlq,
    specs,
    handles,
    stats: () =>
      handles.reduce(
        (sum, h) => {
          const s = h.stats();
          return {
            processed: sum.processed + s.processed,
            duplicates: sum.duplicates + s.duplicates,
            deadLettered: sum.deadLettered + s.deadLettered,
          };
        },
        { processed: 0, duplicates: 0, deadLettered: 0 },
      ),
    /** Publishes on the consumed subject, with a fresh message id unless one is given. */
    async send(envelope: EventEnvelope, msgId = `${envelope.eventId}.${++msgSeq}`): Promise<EventEnvelope> {
      const spec = specs.find((s) => s.eventType === envelope.eventType)!;
      await bus.publish(spec.subject, Buffer.from(JSON.stringify(envelope)), {
        msgId,
        headers: { traceparent: CONSUMED_TRACEPARENT, 'Content-Type': 'application/json' },
      });
      sent += 1;
      return envelope;
    },
    /** Also counts messages that reach the consumers again through a DLQ replay. */
    expectMore(count: number) {
      sent += count;
    },
    /** Every message sent so far has a verdict: processed, duplicate or dead-lettered. */
    settled: () => waitFor(() => outcomes() >= sent, `${sent} message outcomes`),
    async stop() {
      for (const handle of handles) await handle.stop();
      for (const spec of streamSpecs(config.events, streams)) await bus.deleteStream(spec.name).catch(() => undefined);
      await bus.close();
      await db.close();
    },
  };
}

export type CatalogHarness = Awaited<ReturnType<typeof startCatalogHarness>>;
