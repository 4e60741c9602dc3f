import type { EventsConfig, EventsSlice } from './config.js';
import { AppError } from '../platform/errors/errors.js';
import type { StreamOutcome, StreamStore, StreamSpec } from './bus/event-bus.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export interface StreamOptions {
  /**
   * Prepended to every subject. Production leaves it empty; tests on a shared NATS server use it,
   * because two streams of one account may not hold overlapping subjects.
   */
  subjectPrefix?: string;
  /** JetStream replicas of the streams created here; default config `events.streamReplicas`. */
  replicas?: number;
  storage?: 'file' | 'memory';
}

/** Who creates and configures a stream: this service, or the service that publishes into it. */
export type StreamOwner = 'catalog' | 'producer';

/** The subject prefix of dead letters: `CATALOG.dlq.<original subject>` (design §4; a wire name, so it keeps "dlq"). */
export function deadLetterSubjectPrefix(events: EventsConfig, options: StreamOptions = {}): string {
  return `${options.subjectPrefix ?? ''}${events.catalogStream}.dlq`;
}

/**
 * The subjects the catalog publishes its own events on (the CATALOG stream's): what a follower of
 * the catalog's changes, such as the gateway's response cache, listens to.
 */
export function catalogSubjects(options: Pick<StreamOptions, 'subjectPrefix'> = {}): string[] {
  return [`${options.subjectPrefix ?? ''}catalog.>`];
}

/**
 * The streams of the event system (spec, "Streams", with the deviations of design §4):
 * CATALOG holds 30 days hot (the 13-month cold copy is the outbox archive in Postgres), its dead
 * letters live 90 days in CATALOG_DLQ. The consumed streams (CONTENT, AUTHORING, GDPR) belong to
 * their producers; they are declared here so the development mode and tests can create them.
 */
export function streamSpecs(events: EventsConfig, options: StreamOptions = {}): Array<StreamSpec & { owner: StreamOwner }> {
  const p = options.subjectPrefix ?? '';
  const common = { storage: options.storage ?? 'file', replicas: options.replicas ?? events.streamReplicas } as const;
  const ours = { ...common, owner: 'catalog' } as const;
  const theirs = { ...common, owner: 'producer' } as const;
  return [
    { name: events.catalogStream, subjects: catalogSubjects(options), maxAgeMs: 30 * DAY_MS, ...ours },
    { name: events.dlqStream, subjects: [`${deadLetterSubjectPrefix(events, options)}.>`], maxAgeMs: 90 * DAY_MS, ...ours },
    { name: events.auditStream, subjects: [`${p}audit.>`], maxAgeMs: 30 * DAY_MS, ...ours },
    // AI gateway domain events (ai.review.completed.v1): what consumers act on, unlike the audit trail.
    { name: events.aiStream, subjects: [`${p}ai.>`], maxAgeMs: 30 * DAY_MS, ...ours },
    { name: events.contentStream, subjects: [`${p}content.>`], maxAgeMs: 30 * DAY_MS, ...theirs },
    { name: events.authoringStream, subjects: [`${p}authoring.>`], maxAgeMs: 30 * DAY_MS, ...theirs },
    { name: events.gdprStream, subjects: [`${p}gdpr.>`], maxAgeMs: 30 * DAY_MS, ...theirs },
  ];
}

/**
 * Streams as operators configure them (issue #16): the streams this service owns are created when
 * missing (replicas from STREAM_REPLICAS) and otherwise only given the subjects they lack and the
 * replicas they are short of, never fewer (see stream-config.logic.ts). The producers' streams
 * are created only in development mode (CREATE_PRODUCER_STREAMS, on without NATS_URL); otherwise
 * they are never created or edited here, and a missing one is refused with its name before anything
 * changes (the worker waits for it: events/worker-when-streams.ts).
 */
export async function ensureStreams(
  bus: StreamStore,
  config: EventsSlice,
  options: StreamOptions = {},
): Promise<Array<StreamSpec & { owner: StreamOwner; outcome: StreamOutcome | 'present' }>> {
  const specs = streamSpecs(config.events, options);
  const create = specs.filter((spec) => spec.owner === 'catalog' || config.events.createProducerStreams);
  const expected = specs.filter((spec) => !create.includes(spec));
  // Checked before anything is created, so a start that cannot consume changes nothing.
  const missing = [];
  for (const spec of expected) if (!(await bus.streamConfig(spec.name))) missing.push(spec);
  if (missing.length) {
    throw new AppError(
      'events.stream_missing',
      `${missing.map((spec) => `Stream ${spec.name} (${spec.subjects.join(', ')})`).join(', ')} does not exist. Each belongs to the service that publishes its events, which creates it; for development set CREATE_PRODUCER_STREAMS=true to create it here.`,
      { status: 503 },
    );
  }
  const out = [];
  for (const spec of specs) {
    out.push({ ...spec, outcome: create.includes(spec) ? await bus.ensureStream(spec) : ('present' as const) });
  }
  return out;
}
