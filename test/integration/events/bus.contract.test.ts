import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BusMessage, DurableConsumerSpec, EventBus, MaxDeliveriesAdvisory } from '../../../events/bus/event-bus.js';
import { eventually } from '../../support/eventually.js';
import { busFactories, bytes, deferred, recorder, text, uniqueToken } from './helpers.js';

interface Seen {
  subject: string;
  body: string;
  deliveryCount: number;
  redelivered: boolean;
  headers: Record<string, string>;
  seq: number;
}

const seen = (m: BusMessage): Seen => ({
  subject: m.subject,
  body: text(m.data),
  deliveryCount: m.deliveryCount,
  redelivered: m.redelivered,
  headers: m.headers,
  seq: m.seq,
});

describe.each(busFactories())('EventBus contract: $name', (factory) => {
  let bus: EventBus;
  const run = uniqueToken();
  let n = 0;
  const created: string[] = [];

  beforeAll(async () => {
    bus = await factory.open();
  });
  afterEach(async () => {
    for (const name of created.splice(0)) await bus.deleteStream(name);
  });
  afterAll(async () => bus?.close());

  /** A fresh stream over `t<run>.<n>.>` and a consumer spec on it. */
  async function fixture(overrides: Partial<DurableConsumerSpec> = {}, storage: 'memory' | 'file' = 'memory') {
    n += 1;
    const name = `T_${run}_${n}`.toUpperCase();
    const prefix = `t${run}.${n}`;
    await bus.ensureStream({ name, subjects: [`${prefix}.>`], maxAgeMs: 60 * 60 * 1000, storage });
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
  }

  /** Subscribes, recording every message and giving it `verdict` (ack by default). */
  async function recordAll(consumer: DurableConsumerSpec, verdict: (m: BusMessage) => void = (m) => m.ack()) {
    const got = recorder<Seen>();
    const sub = await bus.consume(consumer, async (m) => {
      got.push(seen(m));
      verdict(m);
    });
    return { got, sub };
  }

  it('publishes and consumes with subject, body and headers', async () => {
    const { name, prefix, consumer } = await fixture();
    const got = recorder<Seen>();
    const results = [];
    for (const i of [1, 2, 3]) {
      results.push(
        await bus.publish(`${prefix}.order.v1`, bytes(`m${i}`), {
          msgId: `id-${run}-${i}`,
          headers: {
            traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
            'Content-Type': 'application/json',
            'x-extra': `e${i}`,
          },
        }),
      );
    }
    expect(results.map((r) => [r.stream, r.seq, r.duplicate])).toEqual([
      [name, 1, false],
      [name, 2, false],
      [name, 3, false],
    ]);
    const sub = await bus.consume(consumer, async (m) => {
      got.push(seen(m));
      m.ack();
    });
    await got.until((items) => items.length === 3, 'three messages');
    await sub.stop();
    expect(got.items.map((s) => [s.subject, s.body, s.deliveryCount, s.redelivered])).toEqual([
      [`${prefix}.order.v1`, 'm1', 1, false],
      [`${prefix}.order.v1`, 'm2', 1, false],
      [`${prefix}.order.v1`, 'm3', 1, false],
    ]);
    expect(got.items[0].headers).toMatchObject({
      'Nats-Msg-Id': `id-${run}-1`,
      traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
      'Content-Type': 'application/json',
      'x-extra': 'e1',
    });
    expect(await bus.streamState(name)).toMatchObject({ messages: 3, firstSeq: 1, lastSeq: 3 });
  });

  it("tells when the stream's first stored message was stored, and nothing when it is empty", async () => {
    const { name, prefix } = await fixture();
    expect((await bus.streamState(name)).firstTime).toBeUndefined();
    await bus.publish(`${prefix}.a`, bytes('1'));
    await bus.publish(`${prefix}.a`, bytes('2'));
    const [first, second] = await bus.readStream(name);
    expect((await bus.streamState(name)).firstTime).toEqual(first.time);
    await bus.deleteMessage(name, first.seq);
    expect(await bus.streamState(name)).toMatchObject({ messages: 1, firstSeq: second.seq, firstTime: second.time });
    await bus.deleteMessage(name, second.seq);
    expect((await bus.streamState(name)).firstTime).toBeUndefined();
  });

  it('drops a repeated Nats-Msg-Id within the duplicate window and reports it as a duplicate', async () => {
    const { name, prefix, consumer } = await fixture();
    const first = await bus.publish(`${prefix}.x`, bytes('once'), { msgId: `dup-${run}` });
    const again = await bus.publish(`${prefix}.x`, bytes('once'), { msgId: `dup-${run}` });
    await bus.publish(`${prefix}.x`, bytes('sentinel'), { msgId: `sentinel-${run}` });
    expect(again).toEqual({ stream: name, seq: first.seq, duplicate: true });
    const { got, sub } = await recordAll(consumer);
    await got.until((items) => items.some((s) => s.body === 'sentinel'), 'the sentinel');
    await sub.stop();
    expect(got.items.map((s) => s.body)).toEqual(['once', 'sentinel']);
    expect((await bus.streamState(name)).messages).toBe(2);
  });

  it('redelivers after a nak with delay, counting deliveries', async () => {
    const { prefix, consumer } = await fixture();
    await bus.publish(`${prefix}.x`, bytes('retry-me'));
    const { got, sub } = await recordAll(consumer, (m) => {
      if (m.deliveryCount === 1) m.nak(50);
      else m.ack();
    });
    await got.until((items) => items.length === 2, 'the redelivery');
    await sub.stop();
    expect(got.items.map((s) => [s.body, s.deliveryCount, s.redelivered])).toEqual([
      ['retry-me', 1, false],
      ['retry-me', 2, true],
    ]);
  });

  it('redelivers a message that was neither acked nor naked once the ack wait passes', async () => {
    const { prefix, consumer } = await fixture();
    await bus.publish(`${prefix}.x`, bytes('silent'));
    const { got, sub } = await recordAll(consumer, (m) => {
      if (m.deliveryCount > 1) m.ack();
    });
    await got.until((items) => items.length === 2, 'the ack-wait redelivery');
    await sub.stop();
    expect(got.items.map((s) => s.deliveryCount)).toEqual([1, 2]);
  });

  it('stops delivering after max_deliver and raises the MAX_DELIVERIES advisory', async () => {
    const { name, prefix, consumer } = await fixture({ maxDeliver: 3 });
    const advisories = recorder<MaxDeliveriesAdvisory>();
    const off = bus.onMaxDeliveries((a) => {
      if (a.stream === name) advisories.push(a);
    });
    await bus.publish(`${prefix}.poison`, bytes('poison'));
    const { got, sub } = await recordAll(consumer, (m) => {
      if (m.subject.endsWith('.poison')) m.nak();
      else m.ack();
    });
    const [advisory] = await advisories.until((items) => items.length === 1, 'the advisory');
    await bus.publish(`${prefix}.sentinel`, bytes('sentinel'));
    await got.until((items) => items.some((s) => s.body === 'sentinel'), 'the sentinel');
    await sub.stop();
    off();
    expect(advisory).toMatchObject({ stream: name, consumer: consumer.durable, streamSeq: 1, deliveries: 3 });
    expect(got.items.filter((s) => s.body === 'poison').map((s) => s.deliveryCount)).toEqual([1, 2, 3]);
  });

  it('never redelivers a terminated message', async () => {
    const { prefix, consumer } = await fixture();
    await bus.publish(`${prefix}.x`, bytes('terminate-me'));
    await bus.publish(`${prefix}.x`, bytes('sentinel'));
    const { got, sub } = await recordAll({ ...consumer, maxAckPending: 1 }, (m) => {
      if (text(m.data) === 'terminate-me') m.term('test');
      else m.ack();
    });
    await got.until((items) => items.some((s) => s.body === 'sentinel'), 'the sentinel');
    await sub.stop();
    expect(got.items.map((s) => [s.body, s.deliveryCount])).toEqual([
      ['terminate-me', 1],
      ['sentinel', 1],
    ]);
  });

  it('keeps publish order per subject', async () => {
    const { prefix, consumer } = await fixture();
    for (let i = 0; i < 20; i++) {
      await bus.publish(`${prefix}.a`, bytes(`a${i}`));
      await bus.publish(`${prefix}.b`, bytes(`b${i}`));
    }
    const { got, sub } = await recordAll(consumer);
    await got.until((items) => items.length === 40, 'forty messages');
    await sub.stop();
    const order = (s: string) => got.items.filter((m) => m.subject === `${prefix}.${s}`).map((m) => m.body);
    expect(order('a')).toEqual(Array.from({ length: 20 }, (_, i) => `a${i}`));
    expect(order('b')).toEqual(Array.from({ length: 20 }, (_, i) => `b${i}`));
  });

  it('resumes a durable consumer where it stopped', async () => {
    const { prefix, consumer } = await fixture();
    for (const i of [1, 2, 3]) await bus.publish(`${prefix}.x`, bytes(`first${i}`));
    const { got: before, sub: first } = await recordAll(consumer);
    await before.until((items) => items.length === 3, 'the first three');
    await first.stop();
    for (const i of [4, 5]) await bus.publish(`${prefix}.x`, bytes(`later${i}`));
    const { got: after, sub: second } = await recordAll(consumer);
    await after.until((items) => items.length === 2, 'the two published while stopped');
    await bus.publish(`${prefix}.x`, bytes('sentinel'));
    await after.until((items) => items.some((s) => s.body === 'sentinel'), 'the sentinel');
    await second.stop();
    expect(after.items.map((s) => [s.body, s.deliveryCount])).toEqual([
      ['later4', 1],
      ['later5', 1],
      ['sentinel', 1],
    ]);
  });

  it('lets the message in hand finish when a subscription stops', async () => {
    const { prefix, consumer } = await fixture();
    await bus.publish(`${prefix}.x`, bytes('slow'));
    const entered = deferred();
    const release = deferred();
    const got = recorder<Seen>();
    const sub = await bus.consume(consumer, async (m) => {
      entered.resolve();
      await release.promise;
      got.push(seen(m));
      m.ack();
    });
    await entered.promise;
    let stopped = false;
    const stopping = sub.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    release.resolve();
    await stopping;
    expect(got.items.map((s) => s.body)).toEqual(['slow']);
    // Acked before the stop completed: a new subscription sees only what comes next.
    const { got: after, sub: again } = await recordAll(consumer);
    await bus.publish(`${prefix}.x`, bytes('next'));
    await after.until((items) => items.length >= 1, 'the next message');
    await again.stop();
    expect(after.items.map((s) => s.body)).toEqual(['next']);
  });

  it('hands one message at a time by default, and up to `concurrency` at once when asked', async () => {
    for (const concurrency of [undefined, 3]) {
      const { prefix, consumer } = await fixture(concurrency ? { concurrency } : {});
      for (const i of [1, 2, 3, 4, 5, 6]) await bus.publish(`${prefix}.x`, bytes(`m${i}`));
      const slots = concurrency ?? 1;
      let running = 0;
      let most = 0;
      // Each handler holds its slot until the test frees it: a message the bus hands over while
      // every slot is held raises `most` above the slots, whenever it comes.
      const releases = new Map<string, () => void>();
      const entered = recorder<string>();
      const sub = await bus.consume(consumer, async (m) => {
        running += 1;
        most = Math.max(most, running);
        const held = new Promise<void>((resolve) => releases.set(text(m.data), resolve));
        entered.push(text(m.data));
        await held;
        running -= 1;
        m.ack();
      });
      await entered.until((items) => items.length >= slots, 'the first handlers');
      expect(entered.items).toHaveLength(slots);
      // Free one slot at a time, in the order they were taken; each frees room for one more.
      for (let freed = 0; freed < 6; freed++) {
        releases.get(entered.items[freed])!();
        const expected = Math.min(6, slots + freed + 1);
        await entered.until((items) => items.length >= expected, `${expected} handlers`);
      }
      await sub.stop();
      expect(most).toBe(slots);
      expect([...entered.items].sort()).toEqual(['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
    }
  });

  it('lets every handler in flight finish when a subscription with concurrency stops', async () => {
    const { prefix, consumer } = await fixture({ concurrency: 2 });
    await bus.publish(`${prefix}.x`, bytes('a'));
    await bus.publish(`${prefix}.x`, bytes('b'));
    const release = deferred();
    const entered = recorder<string>();
    const acked: string[] = [];
    const sub = await bus.consume(consumer, async (m) => {
      entered.push(text(m.data));
      await release.promise;
      acked.push(text(m.data));
      m.ack();
    });
    await entered.until((items) => items.length === 2, 'both handlers');
    const stopping = sub.stop();
    release.resolve();
    await stopping;
    expect(acked.sort()).toEqual(['a', 'b']);
  });

  it('reads, gets and deletes stored messages by subject filter', async () => {
    // File storage, as production streams: it answers a missing sequence in its own words.
    const { name, prefix } = await fixture({}, 'file');
    await bus.publish(`${prefix}.keep.one`, bytes('k1'), { headers: { 'x-h': '1' } });
    await bus.publish(`${prefix}.other`, bytes('o1'));
    await bus.publish(`${prefix}.keep.two`, bytes('k2'));
    const kept = await bus.readStream(name, { filterSubject: `${prefix}.keep.>` });
    expect(kept.map((m) => [m.seq, m.subject, text(m.data)])).toEqual([
      [1, `${prefix}.keep.one`, 'k1'],
      [3, `${prefix}.keep.two`, 'k2'],
    ]);
    expect(kept[0].headers['x-h']).toBe('1');
    expect((await bus.readStream(name, { maxCount: 2 })).map((m) => m.seq)).toEqual([1, 2]);
    expect(text((await bus.getMessage(name, 2))!.data)).toBe('o1');
    expect(await bus.deleteMessage(name, 2)).toBe(true);
    expect(await bus.getMessage(name, 2)).toBeUndefined();
    expect(await bus.deleteMessage(name, 2)).toBe(false);
    // The first message, deleted by several clients at once: one deletes it, the others are told
    // it is gone (a sequence below the stream's first is answered in other words than a gap).
    await bus.publish(`${prefix}.keep.three`, bytes('k3'));
    const racing = await Promise.all([1, 2, 3, 4, 5].map(() => bus.deleteMessage(name, 1)));
    expect(racing.filter(Boolean)).toHaveLength(1);
    expect(await bus.deleteMessage(name, 1)).toBe(false);
    expect((await bus.readStream(name)).map((m) => m.seq)).toEqual([3, 4]);
    expect((await bus.streamState(name)).messages).toBe(2);
  });

  it('reads a range of sequences, filtered', async () => {
    const { name, prefix } = await fixture();
    for (const i of [1, 2, 3, 4, 5, 6]) await bus.publish(`${prefix}.${i % 2 ? 'odd' : 'even'}`, bytes(`m${i}`));
    const range = await bus.readStream(name, { filterSubject: `${prefix}.odd`, fromSeq: 2, toSeq: 5 });
    expect(range.map((m) => [m.seq, text(m.data)])).toEqual([
      [3, 'm3'],
      [5, 'm5'],
    ]);
    expect((await bus.readStream(name, { fromSeq: 5 })).map((m) => m.seq)).toEqual([5, 6]);
    expect((await bus.readStream(name, { fromSeq: 2, maxCount: 2 })).map((m) => m.seq)).toEqual([2, 3]);
    expect(await bus.readStream(name, { fromSeq: 7 })).toEqual([]);
  });

  it('reads a filtered stream a page at a time, headers only when asked, and stops where the reader stops', async () => {
    const { name, prefix } = await fixture();
    for (const i of [1, 2, 3, 4, 5, 6, 7])
      await bus.publish(`${prefix}.${i % 2 ? 'odd' : 'even'}`, bytes(`m${i}`), { headers: { 'x-i': `${i}` } });
    const pages: Array<Array<[number, string, string]>> = [];
    for await (const page of bus.readPages(name, { filterSubject: `${prefix}.odd`, pageSize: 2, headersOnly: true })) {
      pages.push(page.map((m) => [m.seq, m.headers['x-i'], text(m.data)]));
    }
    expect(pages).toEqual([
      [
        [1, '1', ''],
        [3, '3', ''],
      ],
      [
        [5, '5', ''],
        [7, '7', ''],
      ],
    ]);
    const bodies: string[] = [];
    for await (const page of bus.readPages(name, { fromSeq: 2, pageSize: 3 })) {
      bodies.push(...page.map((m) => text(m.data)));
      break;
    }
    expect(bodies).toEqual(['m2', 'm3', 'm4']);
    // Leaving a read early ends it: the stream can be read again, and deleted, at once.
    expect((await bus.readStream(name, { maxCount: 1 })).map((m) => text(m.data))).toEqual(['m1']);
  });

  it("reports a consumer's ack floor: below it everything is settled, above it a message may still be in hand", async () => {
    const { prefix, name, consumer } = await fixture({ ackWaitMs: 60_000 });
    for (const i of [1, 2, 3, 4]) await bus.publish(`${prefix}.x`, bytes(`m${i}`));
    const held: BusMessage[] = [];
    const got = recorder<number>();
    const sub = await bus.consume({ ...consumer, concurrency: 4 }, async (m) => {
      // m2 stays in hand; the others are acked (m4 terminated).
      if (m.seq === 2) held.push(m);
      else if (m.seq === 4) m.term();
      else m.ack();
      got.push(m.seq);
    });
    await got.until((items) => items.length === 4, 'four deliveries');
    // Acks travel asynchronously to the server: wait for it to have them, bounded.
    await eventually(async () => expect(await bus.consumerAckFloor(name, consumer.durable)).toBe(1), 'ack floor 1', {
      intervalMs: 10,
    });
    held[0].ack();
    await eventually(async () => expect(await bus.consumerAckFloor(name, consumer.durable)).toBe(4), 'ack floor 4', {
      intervalMs: 10,
    });
    await sub.stop();
  });

  it('creates a missing stream as specified; an existing one keeps its settings, gains missing subjects, never loses replicas', async () => {
    n += 1;
    const name = `T_${run}_${n}`.toUpperCase();
    const subjects = [`t${run}.${n}.a.>`];
    const hour = 60 * 60 * 1000;
    expect(await bus.streamConfig(name)).toBeUndefined();
    expect(await bus.ensureStream({ name, subjects, maxAgeMs: hour, storage: 'memory' })).toBe('created');
    created.push(name);
    expect(await bus.streamConfig(name)).toEqual({ subjects, replicas: 1, maxAgeMs: hour });
    // A restart with the same settings sends no update.
    expect(await bus.ensureStream({ name, subjects, maxAgeMs: hour, storage: 'memory' })).toBe('unchanged');
    // Another retention in the code does not override the stream's; a new subject is added.
    const more = [...subjects, `t${run}.${n}.b.>`];
    expect(await bus.ensureStream({ name, subjects: more, maxAgeMs: 2 * hour, storage: 'memory' })).toBe('updated');
    expect(await bus.streamConfig(name)).toEqual({ subjects: more, replicas: 1, maxAgeMs: hour });
    // Subjects an operator added stay when the code names fewer.
    expect(await bus.ensureStream({ name, subjects, maxAgeMs: hour, storage: 'memory' })).toBe('unchanged');
    if (factory.name === 'in-process') {
      // A single NATS server cannot hold replicas; the in-process bus records them.
      expect(await bus.ensureStream({ name, subjects, maxAgeMs: hour, replicas: 3 })).toBe('updated');
      expect(await bus.ensureStream({ name, subjects, maxAgeMs: hour, replicas: 1 })).toBe('unchanged');
      expect((await bus.streamConfig(name))?.replicas).toBe(3);
    }
  });
});
