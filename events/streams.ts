import type { Config } from '../platform/config/config.js';
import type { EventBus, StreamSpec } from './bus/event-bus.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export interface StreamOptions {
  /**
   * Prepended to every subject. Production leaves it empty; tests on a shared NATS server use it,
   * because two streams of one account may not hold overlapping subjects.
   */
  subjectPrefix?: string;
  /** JetStream replicas per stream: 3 on a production cluster, 1 on a single server. */
  replicas?: number;
  storage?: 'file' | 'memory';
}

/** The subject prefix of dead letters: `CATALOG.dlq.<original subject>` (design §4). */
export function dlqSubjectPrefix(events: Config['events'], options: StreamOptions = {}): string {
  return `${options.subjectPrefix ?? ''}${events.catalogStream}.dlq`;
}

/**
 * The streams of the event system (spec, "Streams", with the deviations of design §4):
 * CATALOG holds 30 days hot (the 13-month cold copy is the outbox archive in Postgres), its dead
 * letters live 90 days in CATALOG_DLQ. The consumed streams belong to other services in
 * production; they are declared here so the embedded mode and tests have them.
 */
export function streamSpecs(events: Config['events'], options: StreamOptions = {}): StreamSpec[] {
  const p = options.subjectPrefix ?? '';
  const common = { storage: options.storage ?? 'file', replicas: options.replicas ?? 1 } as const;
  return [
    { name: events.catalogStream, subjects: [`${p}catalog.>`], maxAgeMs: 30 * DAY_MS, ...common },
    { name: events.dlqStream, subjects: [`${dlqSubjectPrefix(events, options)}.>`], maxAgeMs: 90 * DAY_MS, ...common },
    { name: events.auditStream, subjects: [`${p}audit.>`], maxAgeMs: 30 * DAY_MS, ...common },
    // AI gateway domain events (ai.review.completed.v1): what consumers act on, unlike the audit trail.
    { name: events.aiStream, subjects: [`${p}ai.>`], maxAgeMs: 30 * DAY_MS, ...common },
    { name: events.contentStream, subjects: [`${p}content.>`], maxAgeMs: 30 * DAY_MS, ...common },
    { name: events.authoringStream, subjects: [`${p}authoring.>`], maxAgeMs: 30 * DAY_MS, ...common },
    { name: events.gdprStream, subjects: [`${p}gdpr.>`], maxAgeMs: 30 * DAY_MS, ...common },
  ];
}

export async function ensureStreams(
  bus: EventBus,
  config: Pick<Config, 'events'>,
  options: StreamOptions = {},
): Promise<StreamSpec[]> {
  const specs = streamSpecs(config.events, options);
  for (const spec of specs) await bus.ensureStream(spec);
  return specs;
}
