import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSystemConfig, type SystemConfig } from '../../../processes/config.js';
import { newId, newUlid } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { systemClock } from '../../../platform/clock.js';
import { startConsumer } from '../../../events/consume/consumer-runner.js';
import type { ConsumerHandle, ConsumerSpec } from '../../../events/consume/consumer-spec.js';
import type { DeadLetterLocation } from '../../../events/dead-letters/dead-letters.js';
import { buildEnvelope, type ConsumedEnvelope, type EventEnvelope } from '../../../events/envelope.js';
import { createEventProducer, type EventProducer } from '../../../events/publish/outbox.js';
import { completeEnvelope, type EnvelopeDraft } from '../../../events/publish/publish.logic.js';
import { loadSchemaRegistry, type SchemaRegistry } from '../../../events/schemas/registry.js';
import { deadLetterSubjectPrefix, ensureStreams, streamSpecs, type StreamOptions } from '../../../events/streams.js';
import { catalogConsumers } from '../../../subgraphs/catalog/consumers.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { eventually } from '../../support/eventually.js';
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

const FIXTURES = fileURLToPath(new URL('../../fixtures/consumed-events/', import.meta.url));
const FIXTURE_FILES: Record<ConsumedKind, string> = {
  built: 'content.play_package.built.v1.json',
  draft: 'authoring.course_draft.published.v1.json',
  gdpr: 'gdpr.subject_request.received.v1.json',
};

/** A consumed-event fixture file (test/fixtures/consumed-events) as written: an envelope draft. */
export function fixtureDraft(kind: ConsumedKind): EnvelopeDraft {
  return JSON.parse(fs.readFileSync(path.join(FIXTURES, FIXTURE_FILES[kind]), 'utf8')) as EnvelopeDraft;
}

/**
 * A fixture completed as `npm run events:publish` completes it, moved to `tenantId` (envelope and
 * payload) so tests sharing a database do not meet.
 */
export function fixtureEnvelope(kind: ConsumedKind, tenantId: string): EventEnvelope {
  const draft = fixtureDraft(kind);
  return completeEnvelope(
    { ...draft, tenantId, payload: { ...draft.payload, tenantId } },
    { registry, now: new Date(), newId: () => newUlid(), source: { service: 'test', instance: 'i-1', commit: 'test' } },
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

export interface HarnessOptions {
  /** Consumers per durable: more than one processes messages of one consumer concurrently. */
  replicas?: number;
  /** Ack wait of every consumer (default: the configuration's 30 s). */
  ackWaitMs?: number;
  /** Start no consumer until `startConsumers()` is called (to arrange what other processes hold first). */
  deferConsumers?: boolean;
  /** The play package formats the consumers publish (default: this build's); fewer plays an older build. */
  playPackageFormats?: readonly string[];
  /** Runs before the catalog's handler (per event, also in a batch); throwing makes the delivery fail (a broken dependency). */
  intercept?: (envelope: ConsumedEnvelope) => void;
}

/**
 * The catalog's three consumers exactly as `catalogConsumers` declares them, run by the events
 * runner over a bus and a fresh database, on streams of their own.
 */
export async function startCatalogHarness(stack: Stack, options: HarnessOptions = {}) {
  const db: TestDatabase = await createTestDatabase(stack.db);
  const bus: EventBus = await stack.bus.open();
  const token = uniqueToken();
  const config: SystemConfig = loadSystemConfig(streamEnv(token));
  const streams: StreamOptions = { subjectPrefix: `${stack.subjectPrefix}p${token}.`, storage: 'memory' };
  await ensureStreams(bus, config, streams);
  const deadLetterStream: DeadLetterLocation = {
    stream: config.events.dlqStream,
    subjectPrefix: deadLetterSubjectPrefix(config.events, streams),
  };
  const producer = catalogProducer();
  const specs = catalogConsumers({
    events: config.events,
    gdprZeroingRetentionClasses: config.gdprZeroingRetentionClasses,
    subjectPrefix: streams.subjectPrefix,
    playPackageFormats: options.playPackageFormats,
  });
  const handles: ConsumerHandle[] = [];
  const startConsumers = async () => {
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
            ackWaitMs: options.ackWaitMs ?? spec.ackWaitMs!,
            nakDelayMs: () => 20,
            deadLetterStream,
          }),
        );
      }
    }
  };
  if (!options.deferConsumers) await startConsumers();
  let sent = 0;
  let msgSeq = 0;
  const outcomes = () => handles.reduce((sum, h) => sum + h.stats().processed + h.stats().duplicates + h.stats().deadLettered, 0);

  return {
    db,
    bus,
    config,
    streams,
    deadLetterStream,
    specs,
    handles,
    startConsumers,
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
    settled: () => eventually(() => outcomes() >= sent, `${sent} message outcomes`, { intervalMs: 10 }),
    async stop() {
      for (const handle of handles) await handle.stop();
      for (const spec of streamSpecs(config.events, streams)) await bus.deleteStream(spec.name).catch(() => undefined);
      await bus.close();
      await db.close();
    },
  };
}

export type CatalogHarness = Awaited<ReturnType<typeof startCatalogHarness>>;
