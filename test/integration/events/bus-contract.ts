import { afterAll, afterEach, beforeAll } from 'vitest';
import type { BusMessage, DurableConsumerSpec, EventBus } from '../../../events/bus/event-bus.js';
import { recorder, text, uniqueToken, type BusFactory } from './helpers.js';

/** What a contract test records of a delivered message. */
export interface Seen {
  subject: string;
  body: string;
  deliveryCount: number;
  redelivered: boolean;
  headers: Record<string, string>;
  seq: number;
}

export const seen = (m: BusMessage): Seen => ({
  subject: m.subject,
  body: text(m.data),
  deliveryCount: m.deliveryCount,
  redelivered: m.redelivered,
  headers: m.headers,
  seq: m.seq,
});

/**
 * The setting both bus contracts (bus-messaging.contract.test.ts, stream-store.contract.test.ts)
 * share: one bus per adapter, fresh streams per test, deleted after each. Call inside `describe`.
 */
export function busContract(factory: BusFactory) {
  let bus: EventBus | undefined;
  const run = uniqueToken();
  let n = 0;
  const created: string[] = [];

  beforeAll(async () => {
    bus = await factory.open();
  });
  afterEach(async () => {
    for (const name of created.splice(0)) await bus!.deleteStream(name);
  });
  afterAll(async () => bus?.close());

  const t = {
    run,
    get bus(): EventBus {
      if (!bus) throw new Error('the bus opens in beforeAll');
      return bus;
    },
    /** A stream name and subject prefix no other test uses; the stream is deleted after the test once `created` has it. */
    fresh() {
      n += 1;
      return { name: `T_${run}_${n}`.toUpperCase(), prefix: `t${run}.${n}` };
    },
    created,
    /** A fresh stream over `t<run>.<n>.>` and a consumer spec on it. */
    async fixture(overrides: Partial<DurableConsumerSpec> = {}, storage: 'memory' | 'file' = 'memory') {
      const { name, prefix } = t.fresh();
      await t.bus.ensureStream({ name, subjects: [`${prefix}.>`], maxAgeMs: 60 * 60 * 1000, storage });
      created.push(name);
      const consumer: DurableConsumerSpec = {
        stream: name,
        durable: `d_${run}_${n}`,
        filterSubject: `${prefix}.>`,
        ackWaitMs: factory.ackWaitMs,
        maxDeliver: 6,
        ...overrides,
      };
      return { name, prefix, consumer };
    },
    /** Subscribes, recording every message and giving it `verdict` (ack by default). */
    async recordAll(consumer: DurableConsumerSpec, verdict: (m: BusMessage) => void = (m) => m.ack()) {
      const got = recorder<Seen>();
      const sub = await t.bus.consume(consumer, async (m) => {
        got.push(seen(m));
        verdict(m);
      });
      return { got, sub };
    },
  };
  return t;
}
