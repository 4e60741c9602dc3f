import type { Redis } from 'ioredis';
import type { ConsumerSpec } from '../../events/consume/consumer-spec.js';
import type { EventsConfig } from '../../events/config.js';
import { subjectFor } from '../../events/envelope.js';
import { handleAiGdprRequest } from './gdpr/handle-gdpr-request.js';

/**
 * Durable consumer names: also the inbox's consumer keys, so they never change once deployed. A
 * durable of its own (not the catalog's) so every GDPR request reaches both subgraphs.
 */
export const AI_DURABLES = {
  gdprSubjectRequest: 'ai-svc-gdpr-subject-request',
} as const;

export interface AiConsumerOptions {
  events: EventsConfig;
  gdprZeroingRetentionClasses: readonly string[];
  /** The state Redis (REDIS_URL): a GDPR erasure reaches the Idempotency-Key records kept there. */
  stateRedis?: Redis;
  /** Tests on a shared NATS server prefix every subject (see events/streams.ts). */
  subjectPrefix?: string;
}

/**
 * The AI subgraph's consumers for the event worker (events/consume/consumer-runner.ts runs them:
 * payload validation, inbox row, one transaction with the handler's writes, ack after commit,
 * redelivery and dead letters), next to the catalog's (processes/worker-part.ts).
 */
export function aiConsumers(options: AiConsumerOptions): ConsumerSpec[] {
  const { events } = options;
  const eventType = 'gdpr.subject_request.received';
  return [
    {
      durable: AI_DURABLES.gdprSubjectRequest,
      stream: events.gdprStream,
      subject: `${options.subjectPrefix ?? ''}${subjectFor(eventType, 1)}`,
      eventType,
      version: 1,
      ackWaitMs: events.ackWaitSeconds * 1000,
      maxDeliver: events.maxDeliver,
      // One request at a time: two requests of one tenant would lock the same rows in either order.
      concurrency: 1,
      handle: async (tx, envelope, ctx) => {
        await handleAiGdprRequest(tx, envelope, {
          logger: ctx.logger,
          zeroingClasses: options.gdprZeroingRetentionClasses,
          idempotencyRedis: options.stateRedis,
        });
      },
    },
  ];
}
