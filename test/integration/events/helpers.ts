import { randomBytes } from 'node:crypto';
import { silentLogger } from '../../../platform/observability/logger.js';
import type { EventBus, StoredMessage } from '../../../events/bus/event-bus.js';
import {
  DEAD_LETTER_HEADERS,
  deadLetterHeaders,
  deadLetterMsgId,
  deadLetterSubject,
} from '../../../events/dead-letters/dead-letter.logic.js';
import type { DeadLetterLocation } from '../../../events/dead-letters/dead-letters.js';
import { createInProcessBus } from '../../../events/bus/in-process-bus.js';
import { connectJetStreamBus } from '../../../events/bus/jetstream-bus.js';
import { realService } from '../../support/services.js';
import { testDatabaseKind, type DatabaseKind } from '../../support/database.js';

/**
 * Items pushed by handlers, and a bounded wait for a condition over them: tests wait on what
 * happened, never on the clock (the timeout only turns a hang into a failure).
 */
export function recorder<T>() {
  const items: T[] = [];
  const waiters = new Set<() => void>();
  return {
    items,
    push(item: T) {
      items.push(item);
      for (const waiter of [...waiters]) waiter();
    },
    until(predicate: (items: T[]) => boolean, what: string, timeoutMs = 15_000): Promise<T[]> {
      return new Promise((resolve, reject) => {
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        const check = () => {
          if (predicate(items)) {
            cleanup();
            resolve(items);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${what} (have ${items.length} items)`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

export function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A name no other test run on the same NATS server uses. */
export function uniqueToken(): string {
  return `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

export interface BusFactory {
  name: 'in-process' | 'jetstream';
  /** Short, to keep redelivery tests quick; 1 s on JetStream so network and pull timing cannot cause a spurious redelivery. */
  ackWaitMs: number;
  open(): Promise<EventBus>;
}

/** In-process always; JetStream when NATS_URL is set. */
export function busFactories(): BusFactory[] {
  const factories: BusFactory[] = [{ name: 'in-process', ackWaitMs: 200, open: async () => createInProcessBus() }];
  const natsUrl = realService('NATS_URL');
  if (natsUrl) {
    factories.push({
      name: 'jetstream',
      ackWaitMs: 1_000,
      open: () => connectJetStreamBus(natsUrl, { logger: silentLogger, pullExpiresMs: 5_000 }),
    });
  }
  return factories;
}

export const text = (data: Uint8Array) => Buffer.from(data).toString('utf8');
export const bytes = (value: string) => new TextEncoder().encode(value);

export interface Stack {
  name: string;
  bus: BusFactory;
  db: DatabaseKind;
  /** Subject prefix isolating this run's streams on a shared NATS server. */
  subjectPrefix: string;
}

/** In-process bus + the run's database always; JetStream + Postgres when NATS_URL and DATABASE_URL are both set. */
export function stacks(): Stack[] {
  const out: Stack[] = [];
  const [inProcess, jetstream] = [
    busFactories().find((f) => f.name === 'in-process')!,
    busFactories().find((f) => f.name === 'jetstream'),
  ];
  out.push({ name: `in-process bus + ${testDatabaseKind()}`, bus: inProcess, db: testDatabaseKind(), subjectPrefix: '' });
  if (jetstream && realService('DATABASE_URL')) {
    out.push({ name: 'JetStream + Postgres', bus: jetstream, db: 'postgres', subjectPrefix: `t${uniqueToken()}.` });
  }
  return out;
}

/** Stream names of one test run: JetStream streams outlive the process, so each run has its own. */
export function streamEnv(token: string): Record<string, string> {
  const t = token.toUpperCase();
  return {
    CATALOG_STREAM: `CATALOG_${t}`,
    CATALOG_DLQ_STREAM: `CATALOG_DLQ_${t}`,
    CONTENT_STREAM: `CONTENT_${t}`,
    AUTHORING_STREAM: `AUTHORING_${t}`,
    GDPR_STREAM: `GDPR_${t}`,
    AUDIT_STREAM: `AUDIT_${t}`,
  };
}

export interface LetterDraft {
  /** The original subject the event was consumed from. */
  subject: string;
  envelope: { eventId: string; eventType: string; tenantId: string; payload?: unknown };
  /** The original stream sequence: one letter per (consumer, stream, sequence). */
  seq: number;
}

/**
 * Dead letters as the DLQ writer publishes them (events/dead-letters/dead-letter-writer.ts), written straight to
 * the DLQ. `legacy` leaves out x-tenant-id, as letters written before that header existed.
 */
export async function writeDeadLetters(
  bus: EventBus,
  location: DeadLetterLocation,
  letters: readonly LetterDraft[],
  options: { legacy?: boolean; consumer?: string; stream?: string } = {},
): Promise<void> {
  const consumer = options.consumer ?? 'catalog-svc-play-package-built';
  const stream = options.stream ?? 'CONTENT';
  for (const letter of letters) {
    const headers = deadLetterHeaders({
      originalSubject: letter.subject,
      originalStream: stream,
      originalSeq: letter.seq,
      consumer,
      deliveryCount: 6,
      error: new Error('handler failed'),
      now: new Date(),
      eventId: letter.envelope.eventId,
      eventType: letter.envelope.eventType,
      tenantId: letter.envelope.tenantId,
    });
    if (options.legacy) delete headers[DEAD_LETTER_HEADERS.tenantId];
    await bus.publish(deadLetterSubject(location.subjectPrefix, letter.subject), bytes(JSON.stringify(letter.envelope)), {
      msgId: deadLetterMsgId(consumer, stream, letter.seq),
      headers,
    });
  }
}

/**
 * A bus that counts what reads of stored messages bring back: headers (every stored message read)
 * and bodies (a getMessage, or a read that carried the message's data), with their bytes.
 */
export function countingBus(inner: EventBus) {
  const reads = { headers: 0, bodies: 0, bodyBytes: 0 };
  const count = (message: StoredMessage | undefined) => {
    if (!message) return message;
    reads.headers += 1;
    if (message.data.length) {
      reads.bodies += 1;
      reads.bodyBytes += message.data.length;
    }
    return message;
  };
  const bus: EventBus = {
    ...inner,
    getMessage: async (stream, seq) => count(await inner.getMessage(stream, seq)),
    readStream: async (stream, options) => (await inner.readStream(stream, options)).map((m) => count(m)!),
    async *readPages(stream, options) {
      for await (const page of inner.readPages(stream, options)) yield page.map((m) => count(m)!);
    },
  };
  return { bus, reads };
}
