import { randomBytes } from 'node:crypto';
import { silentLogger } from '../../../platform/logger.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { createInProcessBus } from '../../../events/bus/in-process-bus.js';
import { connectJetStreamBus } from '../../../events/bus/jetstream-bus.js';
import { realService } from '../../support/services.js';

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
  db: 'pglite' | 'postgres';
  /** Subject prefix isolating this run's streams on a shared NATS server. */
  subjectPrefix: string;
}

/** In-process bus + PGlite always; JetStream + Postgres when NATS_URL and DATABASE_URL are both set. */
export function stacks(): Stack[] {
  const out: Stack[] = [];
  const [inProcess, jetstream] = [
    busFactories().find((f) => f.name === 'in-process')!,
    busFactories().find((f) => f.name === 'jetstream'),
  ];
  out.push({ name: 'in-process bus + PGlite', bus: inProcess, db: 'pglite', subjectPrefix: '' });
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
