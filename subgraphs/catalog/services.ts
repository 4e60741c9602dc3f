import type { DeadLetterReplayBus } from '../../events/dead-letters/dead-letters.js';
import { systemClock, type Clock } from '../../platform/clock.js';
import type { DeadLetterLocation } from '../../events/dead-letters/dead-letters.js';
import { createEventProducer } from '../../events/publish/outbox.js';
import { loadSchemaRegistry, type SchemaRegistry } from '../../events/schemas/registry.js';
import { deadLetterSubjectPrefix, type StreamOptions } from '../../events/streams.js';
import type { EventsSlice } from '../../events/config.js';
import type { PlatformConfig } from '../../platform/config/config.js';
import type { CatalogSlice } from './config.js';
import type { Logger } from '../../platform/observability/logger.js';
import { unconfiguredEnrollmentCounter, type EnrollmentCounter } from './enrollment-counter.js';
import { createCatalogEvents, type CatalogEvents } from './outbox-port.js';

/** What the catalog's mutations need beyond the database: built once per process. */
export interface CatalogServices {
  events: CatalogEvents;
  enrollmentCounter: EnrollmentCounter;
  gdprZeroingRetentionClasses: readonly string[];
  /** Absent until a bus is wired in: replayDeadLetters then answers service.unavailable. */
  deadLetters?: { bus: DeadLetterReplayBus; deadLetterStream: DeadLetterLocation };
  /** Called after a mutation that wrote events commits, e.g. to wake the outbox relay. */
  afterEventsCommitted?: () => void;
}

export interface CatalogServiceOptions {
  config: EventsSlice & Pick<PlatformConfig, 'service'> & Pick<CatalogSlice, 'gdprZeroingRetentionClasses'>;
  logger: Logger;
  bus?: DeadLetterReplayBus;
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
          deadLetterStream: {
            stream: config.events.dlqStream,
            subjectPrefix: deadLetterSubjectPrefix(config.events, options.streams),
          },
        }
      : undefined,
    afterEventsCommitted: options.afterEventsCommitted,
  };
}
