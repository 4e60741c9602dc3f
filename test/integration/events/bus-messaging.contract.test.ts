import { describe, expect, it } from 'vitest';
import type { MaxDeliveriesAdvisory } from '../../../events/bus/event-bus.js';
import { busContract, seen, type Seen } from './bus-contract.js';
import { busFactories, bytes, deferred, recorder, text } from './helpers.js';

/** Messaging (MessageBus): publish, durable consumption, redelivery, the max-deliveries advisory. */
describe.each(busFactories())('MessageBus contract: $name', (factory) => {
  const t = busContract(factory);

  it('publishes and consumes with subject, body and headers', async () => {
    const { name, prefix, consumer } = await t.fixture();
    const got = recorder<Seen>();
    const results = [];
    for (const i of [1, 2, 3]) {
      results.push(
        await t.bus.publish(`${prefix}.order.v1`, bytes(`m${i}`), {
          msgId: `id-${t.run}-${i}`,
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
    const sub = await t.bus.consume(consumer, async (m) => {
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
      'Nats-Msg-Id': `id-${t.run}-1`,
      traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
      'Content-Type': 'application/json',
      'x-extra': 'e1',
    });
    expect(await t.bus.streamState(name)).toMatchObject({ messages: 3, firstSeq: 1, lastSeq: 3 });
  });

  it('follow hears every message published to matching subjects from then on, and stops when told', async () => {
    const { prefix } = await t.fixture();
    const watched = recorder<[string, string]>();
    const stop = await t.bus.follow([`${prefix}.course.>`], {
      onMessage: (subject, data) => watched.push([subject, text(data)]),
      onGap: () => undefined,
    });
    await t.bus.publish(`${prefix}.course.a`, bytes('one'), { msgId: `w1-${t.run}` });
    await t.bus.publish(`${prefix}.other`, bytes('not watched'));
    await t.bus.publish(`${prefix}.course.b`, bytes('two'));
    await watched.until((items) => items.length >= 2, 'two watched messages');
    await stop();
    await t.bus.publish(`${prefix}.course.c`, bytes('after stop'));
    // A sentinel published after stop reaches a second follower: the first would have heard it by then.
    const sentinel = recorder<string>();
    const stopSentinel = await t.bus.follow([`${prefix}.course.>`], {
      onMessage: (_subject, data) => sentinel.push(text(data)),
      onGap: () => undefined,
    });
    await t.bus.publish(`${prefix}.course.d`, bytes('sentinel'));
    await sentinel.until((items) => items.includes('sentinel'), 'the sentinel');
    await stopSentinel();
    expect(watched.items).toEqual([
      [`${prefix}.course.a`, 'one'],
      [`${prefix}.course.b`, 'two'],
    ]);
  });

  it('follow hands on the headers each message was published with', async () => {
    const { prefix } = await t.fixture();
    const watched = recorder<Record<string, string>>();
    const stop = await t.bus.follow([`${prefix}.course.>`], {
      onMessage: (_subject, _data, headers) => watched.push(headers),
      onGap: () => undefined,
    });
    await t.bus.publish(`${prefix}.course.a`, bytes('one'), {
      msgId: `h1-${t.run}`,
      headers: { 'Outbox-Committed-At': '1700000000123' },
    });
    await t.bus.publish(`${prefix}.course.b`, bytes('two'));
    await watched.until((items) => items.length >= 2, 'two watched messages');
    await stop();
    expect(watched.items[0]).toMatchObject({ 'Outbox-Committed-At': '1700000000123', 'Nats-Msg-Id': `h1-${t.run}` });
    expect(watched.items[1]).not.toHaveProperty('Outbox-Committed-At');
  });

  it('drops a repeated Nats-Msg-Id within the duplicate window and reports it as a duplicate', async () => {
    const { name, prefix, consumer } = await t.fixture();
    const first = await t.bus.publish(`${prefix}.x`, bytes('once'), { msgId: `dup-${t.run}` });
    const again = await t.bus.publish(`${prefix}.x`, bytes('once'), { msgId: `dup-${t.run}` });
    await t.bus.publish(`${prefix}.x`, bytes('sentinel'), { msgId: `sentinel-${t.run}` });
    expect(again).toEqual({ stream: name, seq: first.seq, duplicate: true });
    const { got, sub } = await t.recordAll(consumer);
    await got.until((items) => items.some((s) => s.body === 'sentinel'), 'the sentinel');
    await sub.stop();
    expect(got.items.map((s) => s.body)).toEqual(['once', 'sentinel']);
    expect((await t.bus.streamState(name)).messages).toBe(2);
  });

  it('redelivers after a nak with delay, counting deliveries', async () => {
    const { prefix, consumer } = await t.fixture();
    await t.bus.publish(`${prefix}.x`, bytes('retry-me'));
    const { got, sub } = await t.recordAll(consumer, (m) => {
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
    const { prefix, consumer } = await t.fixture();
    await t.bus.publish(`${prefix}.x`, bytes('silent'));
    const { got, sub } = await t.recordAll(consumer, (m) => {
      if (m.deliveryCount > 1) m.ack();
    });
    await got.until((items) => items.length === 2, 'the ack-wait redelivery');
    await sub.stop();
    expect(got.items.map((s) => s.deliveryCount)).toEqual([1, 2]);
  });

  it('stops delivering after max_deliver and raises the MAX_DELIVERIES advisory', async () => {
    const { name, prefix, consumer } = await t.fixture({ maxDeliver: 3 });
    const advisories = recorder<MaxDeliveriesAdvisory>();
    const off = t.bus.onMaxDeliveries((a) => {
      if (a.stream === name) advisories.push(a);
    });
    await t.bus.publish(`${prefix}.poison`, bytes('poison'));
    const { got, sub } = await t.recordAll(consumer, (m) => {
      if (m.subject.endsWith('.poison')) m.nak();
      else m.ack();
    });
    const [advisory] = await advisories.until((items) => items.length === 1, 'the advisory');
    await t.bus.publish(`${prefix}.sentinel`, bytes('sentinel'));
    await got.until((items) => items.some((s) => s.body === 'sentinel'), 'the sentinel');
    await sub.stop();
    off();
    expect(advisory).toMatchObject({ stream: name, consumer: consumer.durable, streamSeq: 1, deliveries: 3 });
    expect(got.items.filter((s) => s.body === 'poison').map((s) => s.deliveryCount)).toEqual([1, 2, 3]);
  });

  it('never redelivers a terminated message', async () => {
    const { prefix, consumer } = await t.fixture();
    await t.bus.publish(`${prefix}.x`, bytes('terminate-me'));
    await t.bus.publish(`${prefix}.x`, bytes('sentinel'));
    const { got, sub } = await t.recordAll({ ...consumer, maxAckPending: 1 }, (m) => {
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
    const { prefix, consumer } = await t.fixture();
    for (let i = 0; i < 20; i++) {
      await t.bus.publish(`${prefix}.a`, bytes(`a${i}`));
      await t.bus.publish(`${prefix}.b`, bytes(`b${i}`));
    }
    const { got, sub } = await t.recordAll(consumer);
    await got.until((items) => items.length === 40, 'forty messages');
    await sub.stop();
    const order = (s: string) => got.items.filter((m) => m.subject === `${prefix}.${s}`).map((m) => m.body);
    expect(order('a')).toEqual(Array.from({ length: 20 }, (_, i) => `a${i}`));
    expect(order('b')).toEqual(Array.from({ length: 20 }, (_, i) => `b${i}`));
  });

  it('resumes a durable consumer where it stopped', async () => {
    const { prefix, consumer } = await t.fixture();
    for (const i of [1, 2, 3]) await t.bus.publish(`${prefix}.x`, bytes(`first${i}`));
    const { got: before, sub: first } = await t.recordAll(consumer);
    await before.until((items) => items.length === 3, 'the first three');
    await first.stop();
    for (const i of [4, 5]) await t.bus.publish(`${prefix}.x`, bytes(`later${i}`));
    const { got: after, sub: second } = await t.recordAll(consumer);
    await after.until((items) => items.length === 2, 'the two published while stopped');
    await t.bus.publish(`${prefix}.x`, bytes('sentinel'));
    await after.until((items) => items.some((s) => s.body === 'sentinel'), 'the sentinel');
    await second.stop();
    expect(after.items.map((s) => [s.body, s.deliveryCount])).toEqual([
      ['later4', 1],
      ['later5', 1],
      ['sentinel', 1],
    ]);
  });

  it('lets the message in hand finish when a subscription stops', async () => {
    const { prefix, consumer } = await t.fixture();
    await t.bus.publish(`${prefix}.x`, bytes('slow'));
    const entered = deferred();
    const release = deferred();
    const got = recorder<Seen>();
    const sub = await t.bus.consume(consumer, async (m) => {
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
    const { got: after, sub: again } = await t.recordAll(consumer);
    await t.bus.publish(`${prefix}.x`, bytes('next'));
    await after.until((items) => items.length >= 1, 'the next message');
    await again.stop();
    expect(after.items.map((s) => s.body)).toEqual(['next']);
  });

  it('hands one message at a time by default, and up to `concurrency` at once when asked', async () => {
    for (const concurrency of [undefined, 3]) {
      const { prefix, consumer } = await t.fixture(concurrency ? { concurrency } : {});
      for (const i of [1, 2, 3, 4, 5, 6]) await t.bus.publish(`${prefix}.x`, bytes(`m${i}`));
      const slots = concurrency ?? 1;
      let running = 0;
      let most = 0;
      // Each handler holds its slot until the test frees it: a message the bus hands over while
      // every slot is held raises `most` above the slots, whenever it comes.
      const releases = new Map<string, () => void>();
      const entered = recorder<string>();
      const sub = await t.bus.consume(consumer, async (m) => {
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
    const { prefix, consumer } = await t.fixture({ concurrency: 2 });
    await t.bus.publish(`${prefix}.x`, bytes('a'));
    await t.bus.publish(`${prefix}.x`, bytes('b'));
    const release = deferred();
    const entered = recorder<string>();
    const acked: string[] = [];
    const sub = await t.bus.consume(consumer, async (m) => {
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
});
