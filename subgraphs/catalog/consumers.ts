import type { ConsumerSpec, EventHandlerContext } from '../../events/consume/consumer-spec.js';
import { subjectFor, type ConsumedEnvelope } from '../../events/envelope.js';
import type { Tx } from '../../platform/db/database.js';
import type { EventsConfig } from '../../events/config.js';
import { systemClock, type Clock } from '../../platform/clock.js';
import type { ConsumedEventDeps } from './use-cases/consumed-event-rules.js';
import { handleGdprRequest } from './use-cases/handle-gdpr-request.js';
import { publishCourseVersion, publishCourseVersions, type BuiltEvent } from './use-cases/publish-course-version.js';
import { upsertCourseMetadataFromDraft } from './use-cases/upsert-course-metadata-from-draft.js';

/** Durable consumer names: also the inbox's consumer keys, so they never change once deployed. */
export const CATALOG_DURABLES = {
  playPackageBuilt: 'catalog-svc-play-package-built',
  courseDraftPublished: 'catalog-svc-course-draft-published',
  gdprSubjectRequest: 'catalog-svc-gdpr-subject-request',
} as const;

export interface CatalogConsumerOptions {
  events: EventsConfig;
  gdprZeroingRetentionClasses: readonly string[];
  /** Tests on a shared NATS server prefix every subject (see events/streams.ts). */
  subjectPrefix?: string;
  /** Default: the system clock. */
  clock?: Clock;
  /** The play package formats this build publishes (default PLAY_PACKAGE_FORMATS); tests play an older build. */
  playPackageFormats?: readonly string[];
}

/**
 * A built event's course, as the catalog identifies it before the course exists: tenant and slug.
 * Versions of one course are applied in the stream order of their built events, across worker
 * crashes and replicas (docs/catalog-and-events.md, "Producer order per course").
 */
function courseOf(envelope: ConsumedEnvelope): string | undefined {
  const { tenantId, slug } = envelope.payload as { tenantId?: unknown; slug?: unknown };
  return typeof tenantId === 'string' && typeof slug === 'string' ? `${tenantId}\u0000${slug}` : undefined;
}

type UseCase = (tx: Tx, envelope: ConsumedEnvelope, deps: ConsumedEventDeps) => Promise<unknown>;
type BatchUseCase = (tx: Tx, batch: BuiltEvent[], deps: Omit<ConsumedEventDeps, 'events'>) => Promise<unknown>;

/**
 * The catalog's consumers for the event worker (events/consume/consumer-runner.ts runs them: payload
 * validation, inbox row, one transaction with the handler's writes and outbox rows, ack after
 * commit, redelivery and dead letters). Each is a durable JetStream consumer on the producing
 * service's stream, filtered to its event's subject.
 */
export function catalogConsumers(options: CatalogConsumerOptions): ConsumerSpec[] {
  const { events } = options;
  const prefix = options.subjectPrefix ?? '';
  const clock = options.clock ?? systemClock;
  const spec = (
    durable: string,
    stream: string,
    eventType: string,
    useCase: UseCase,
    batchUseCase?: BatchUseCase,
    orderKey?: ConsumerSpec['orderKey'],
  ): ConsumerSpec => ({
    durable,
    stream,
    subject: `${prefix}${subjectFor(eventType, 1)}`,
    eventType,
    version: 1,
    // Spec: ack wait 30 s and 5 redeliveries (max_deliver 6, design §4), both from config.
    ackWaitMs: events.ackWaitSeconds * 1000,
    maxDeliver: events.maxDeliver,
    // Overlapping handlers are safe here: every write of a course takes its row lock and versions
    // get the per-course sequence in commit order (design §4), and a built event waits for the
    // earlier built events of its course however many run at once (orderKey).
    concurrency: events.consumerConcurrency,
    orderKey,
    handle: async (tx: Tx, envelope: ConsumedEnvelope, ctx: EventHandlerContext) => {
      await useCase(tx, envelope, {
        // The runner's ctx.emit is the catalog's emitter for a handler: caused by the consumed event.
        events: ctx,
        logger: ctx.logger,
        gdprZeroingRetentionClasses: options.gdprZeroingRetentionClasses,
        clock,
        playPackageFormats: options.playPackageFormats,
      });
    },
    ...(batchUseCase && {
      // Set-based: a batch of events costs a few statements instead of ~10 each (bench/README.md,
      // events). At concurrency 1 batches run one after the other, each in stream order.
      batchSize: events.consumerBatchSize,
      handleBatch: async (tx, batch, logger) => {
        await batchUseCase(
          tx,
          batch.map(({ envelope, ctx }) => ({ envelope, events: ctx })),
          {
            logger,
            gdprZeroingRetentionClasses: options.gdprZeroingRetentionClasses,
            clock,
            playPackageFormats: options.playPackageFormats,
          },
        );
      },
    }),
  });
  return [
    spec(
      CATALOG_DURABLES.playPackageBuilt,
      events.contentStream,
      'content.play_package.built',
      publishCourseVersion,
      publishCourseVersions,
      courseOf,
    ),
    spec(
      CATALOG_DURABLES.courseDraftPublished,
      events.authoringStream,
      'authoring.course_draft.published',
      upsertCourseMetadataFromDraft,
    ),
    spec(CATALOG_DURABLES.gdprSubjectRequest, events.gdprStream, 'gdpr.subject_request.received', handleGdprRequest),
  ];
}
