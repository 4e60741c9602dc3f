import type { EventBus } from '../../events/bus/event-bus.js';
import { systemClock, type Clock } from '../../events/clock.js';
import type { DlqLocation } from '../../events/dlq.js';
import { createEventProducer } from '../../events/outbox.js';
import { loadSchemaRegistry, type SchemaRegistry } from '../../events/schemas/registry.js';
import { dlqSubjectPrefix, type StreamOptions } from '../../events/streams.js';
import type { Config } from '../../platform/config/config.js';
import type { Logger } from '../../platform/logger.js';
import { unconfiguredEnrollmentCounter, type EnrollmentCounter } from './enrollment-counter.js';
import { createCatalogEvents, type CatalogEvents } from './events.js';

/** What the catalog's mutations need beyond the database: built once per process. */
export interface CatalogServices {
  events: CatalogEvents;
  enrollmentCounter: EnrollmentCounter;
  gdprZeroingRetentionClasses: readonly string[];
  /** Absent until a bus is wired in: replayDeadLetters then answers SERVICE_UNAVAILABLE. */
  deadLetters?: { bus: EventBus; dlq: DlqLocation };
  /** Called after a mutation that wrote events commits, e.g. to wake the outbox relay. */
  afterEventsCommitted?: () => void;
}

export interface CatalogServiceOptions {
  config: Pick<Config, 'events' | 'service' | 'gdprZeroingRetentionClasses'>;
  logger: Logger;
  bus?: EventBus;
  enrollmentCounter?: EnrollmentCounter;
  registry?: SchemaRegistry;
  clock?: Clock;
  /** Subject prefix of the streams (tests on a shared NATS server). */
  streams?: StreamOptions;
  afterEventsCommitted?: () => void;
}

export function createCatalogServices(options: CatalogServiceOptions): CatalogServices {
  const { config } = options;
  const producer = createEventProducer({
    registry: options.registry ?? loadSchemaRegistry(),
    clock: options.clock ?? systemClock,
    source: { service: 'catalog', instance: config.service.instance, commit: config.service.commit },
    dualPublishDays: config.events.dualPublishDays,
  });
  return {
    events: createCatalogEvents(producer),
    enrollmentCounter: options.enrollmentCounter ?? unconfiguredEnrollmentCounter(options.logger),
    gdprZeroingRetentionClasses: config.gdprZeroingRetentionClasses,
    deadLetters: options.bus
      ? {
          bus: options.bus,
          dlq: { stream: config.events.dlqStream, subjectPrefix: dlqSubjectPrefix(config.events, options.streams) },
        }
      : undefined,
    afterEventsCommitted: options.afterEventsCommitted,
  };
}
