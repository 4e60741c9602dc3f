import { describe, expect, it } from 'vitest';
import type { BusMessage } from '../../../events/bus/event-bus.js';
import { eventually } from '../../support/eventually.js';
import { busContract } from './bus-contract.js';
import { busFactories, bytes, recorder, text } from './helpers.js';

/** The stored side (StreamStore): stream administration, stream state, reading, consumer ack floors. */
describe.each(busFactories())('StreamStore contract: $name', (factory) => {
  const t = busContract(factory);

  it("tells when the stream's first stored message was stored, and nothing when it is empty", async () => {
    const { name, prefix } = await t.fixture();
    expect((await t.bus.streamState(name)).firstTime).toBeUndefined();
    await t.bus.publish(`${prefix}.a`, bytes('1'));
    await t.bus.publish(`${prefix}.a`, bytes('2'));
    const [first, second] = await t.bus.readStream(name);
    expect((await t.bus.streamState(name)).firstTime).toEqual(first.time);
    await t.bus.deleteMessage(name, first.seq);
    expect(await t.bus.streamState(name)).toMatchObject({ messages: 1, firstSeq: second.seq, firstTime: second.time });
    await t.bus.deleteMessage(name, second.seq);
    expect((await t.bus.streamState(name)).firstTime).toBeUndefined();
  });

  it('reads, gets and deletes stored messages by subject filter', async () => {
    // File storage, as production streams: it answers a missing sequence in its own words.
    const { name, prefix } = await t.fixture({}, 'file');
    await t.bus.publish(`${prefix}.keep.one`, bytes('k1'), { headers: { 'x-h': '1' } });
    await t.bus.publish(`${prefix}.other`, bytes('o1'));
    await t.bus.publish(`${prefix}.keep.two`, bytes('k2'));
    const kept = await t.bus.readStream(name, { filterSubject: `${prefix}.keep.>` });
    expect(kept.map((m) => [m.seq, m.subject, text(m.data)])).toEqual([
      [1, `${prefix}.keep.one`, 'k1'],
      [3, `${prefix}.keep.two`, 'k2'],
    ]);
    expect(kept[0].headers['x-h']).toBe('1');
    expect((await t.bus.readStream(name, { maxCount: 2 })).map((m) => m.seq)).toEqual([1, 2]);
    expect(text((await t.bus.getMessage(name, 2))!.data)).toBe('o1');
    expect(await t.bus.deleteMessage(name, 2)).toBe(true);
    expect(await t.bus.getMessage(name, 2)).toBeUndefined();
    expect(await t.bus.deleteMessage(name, 2)).toBe(false);
    // The first message, deleted by several clients at once: one deletes it, the others are told
    // it is gone (a sequence below the stream's first is answered in other words than a gap).
    await t.bus.publish(`${prefix}.keep.three`, bytes('k3'));
    const racing = await Promise.all([1, 2, 3, 4, 5].map(() => t.bus.deleteMessage(name, 1)));
    expect(racing.filter(Boolean)).toHaveLength(1);
    expect(await t.bus.deleteMessage(name, 1)).toBe(false);
    expect((await t.bus.readStream(name)).map((m) => m.seq)).toEqual([3, 4]);
    expect((await t.bus.streamState(name)).messages).toBe(2);
  });

  it('reads a range of sequences, filtered', async () => {
    const { name, prefix } = await t.fixture();
    for (const i of [1, 2, 3, 4, 5, 6]) await t.bus.publish(`${prefix}.${i % 2 ? 'odd' : 'even'}`, bytes(`m${i}`));
    const range = await t.bus.readStream(name, { filterSubject: `${prefix}.odd`, fromSeq: 2, toSeq: 5 });
    expect(range.map((m) => [m.seq, text(m.data)])).toEqual([
      [3, 'm3'],
      [5, 'm5'],
    ]);
    expect((await t.bus.readStream(name, { fromSeq: 5 })).map((m) => m.seq)).toEqual([5, 6]);
    expect((await t.bus.readStream(name, { fromSeq: 2, maxCount: 2 })).map((m) => m.seq)).toEqual([2, 3]);
    expect(await t.bus.readStream(name, { fromSeq: 7 })).toEqual([]);
  });

  it('reads a filtered stream a page at a time, headers only when asked, and stops where the reader stops', async () => {
    const { name, prefix } = await t.fixture();
    for (const i of [1, 2, 3, 4, 5, 6, 7])
      await t.bus.publish(`${prefix}.${i % 2 ? 'odd' : 'even'}`, bytes(`m${i}`), { headers: { 'x-i': `${i}` } });
    const pages: Array<Array<[number, string, string]>> = [];
    for await (const page of t.bus.readPages(name, { filterSubject: `${prefix}.odd`, pageSize: 2, headersOnly: true })) {
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
    for await (const page of t.bus.readPages(name, { fromSeq: 2, pageSize: 3 })) {
      bodies.push(...page.map((m) => text(m.data)));
      break;
    }
    expect(bodies).toEqual(['m2', 'm3', 'm4']);
    // Leaving a read early ends it: the stream can be read again, and deleted, at once.
    expect((await t.bus.readStream(name, { maxCount: 1 })).map((m) => text(m.data))).toEqual(['m1']);
  });

  it("reports a consumer's ack floor: below it everything is settled, above it a message may still be in hand", async () => {
    const { prefix, name, consumer } = await t.fixture({ ackWaitMs: 60_000 });
    for (const i of [1, 2, 3, 4]) await t.bus.publish(`${prefix}.x`, bytes(`m${i}`));
    const held: BusMessage[] = [];
    const got = recorder<number>();
    const sub = await t.bus.consume({ ...consumer, concurrency: 4 }, async (m) => {
      // m2 stays in hand; the others are acked (m4 terminated).
      if (m.seq === 2) held.push(m);
      else if (m.seq === 4) m.term();
      else m.ack();
      got.push(m.seq);
    });
    await got.until((items) => items.length === 4, 'four deliveries');
    // Acks travel asynchronously to the server: wait for it to have them, bounded.
    await eventually(async () => expect(await t.bus.consumerAckFloor(name, consumer.durable)).toBe(1), 'ack floor 1', {
      intervalMs: 10,
    });
    held[0].ack();
    await eventually(async () => expect(await t.bus.consumerAckFloor(name, consumer.durable)).toBe(4), 'ack floor 4', {
      intervalMs: 10,
    });
    await sub.stop();
  });

  it('creates a missing stream as specified; an existing one keeps its settings, gains missing subjects, never loses replicas', async () => {
    const { name, prefix } = t.fresh();
    const subjects = [`${prefix}.a.>`];
    const hour = 60 * 60 * 1000;
    expect(await t.bus.streamConfig(name)).toBeUndefined();
    expect(await t.bus.ensureStream({ name, subjects, maxAgeMs: hour, storage: 'memory' })).toBe('created');
    t.created.push(name);
    expect(await t.bus.streamConfig(name)).toEqual({ subjects, replicas: 1, maxAgeMs: hour });
    // A restart with the same settings sends no update.
    expect(await t.bus.ensureStream({ name, subjects, maxAgeMs: hour, storage: 'memory' })).toBe('unchanged');
    // Another retention in the code does not override the stream's; a new subject is added.
    const more = [...subjects, `${prefix}.b.>`];
    expect(await t.bus.ensureStream({ name, subjects: more, maxAgeMs: 2 * hour, storage: 'memory' })).toBe('updated');
    expect(await t.bus.streamConfig(name)).toEqual({ subjects: more, replicas: 1, maxAgeMs: hour });
    // Subjects an operator added stay when the code names fewer.
    expect(await t.bus.ensureStream({ name, subjects, maxAgeMs: hour, storage: 'memory' })).toBe('unchanged');
    if (factory.name === 'in-process') {
      // A single NATS server cannot hold replicas; the in-process bus records them.
      expect(await t.bus.ensureStream({ name, subjects, maxAgeMs: hour, replicas: 3 })).toBe('updated');
      expect(await t.bus.ensureStream({ name, subjects, maxAgeMs: hour, replicas: 1 })).toBe('unchanged');
      expect((await t.bus.streamConfig(name))?.replicas).toBe(3);
    }
  });
});
