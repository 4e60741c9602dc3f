import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { deadLetterReplayMsgId } from '../../../events/dead-letters/dead-letter.logic.js';
import { listDeadLetters, replayDeadLetters, type DeadLetterLocation } from '../../../events/dead-letters/dead-letters.js';
import { deadLetterSubjectPrefix, ensureStreams, streamSpecs } from '../../../events/streams.js';
import { newId } from '../../../platform/ids.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { busFactories, countingBus, streamEnv, text, uniqueToken, writeDeadLetters, type LetterDraft } from './helpers.js';

/**
 * How a replay chooses dead letters and moves them: from headers alone (x-tenant-id, x-event-id,
 * x-event-type, x-dead-lettered-at), bodies fetched only for the letters it replays, each under a
 * message id of its own DLQ sequence.
 */
describe.each(busFactories())('dead-letter selection and replay: $name', (factory) => {
  const token = uniqueToken();
  const config = loadSystemConfig(streamEnv(token));
  const streams = { subjectPrefix: factory.name === 'jetstream' ? `t${token}.` : '', storage: 'memory' as const };
  const location: DeadLetterLocation = {
    stream: config.events.dlqStream,
    subjectPrefix: deadLetterSubjectPrefix(config.events, streams),
  };
  const subject = `${streams.subjectPrefix}content.play_package.built.v1`;
  let inner: EventBus;
  let seq = 0;

  beforeAll(async () => {
    inner = await factory.open();
    await ensureStreams(inner, { ...config, events: { ...config.events, createProducerStreams: true } }, streams);
  });
  afterAll(async () => {
    for (const spec of streamSpecs(config.events, streams)) await inner?.deleteStream(spec.name);
    await inner?.close();
  });

  const letter = (tenantId: string, eventType = 'content.play_package.built'): LetterDraft => ({
    subject,
    seq: ++seq,
    envelope: { eventId: newId('event').slice(4), eventType, tenantId, payload: { pad: 'x'.repeat(2_000) } },
  });

  it('chooses by headers alone: a dry run reads no body, a replay one per letter it moves', async () => {
    const [mine, other] = [newId('tenant'), newId('tenant')];
    const letters = [letter(other), letter(mine), letter(other), letter(mine, 'content.play_package.withdrawn'), letter(mine)];
    await writeDeadLetters(inner, location, letters);
    const { bus, reads } = countingBus(inner);

    const dry = await replayDeadLetters(bus, location, { tenantId: mine, eventType: 'content.play_package.built', dryRun: true });
    expect(dry.letters.map((l) => l.eventId)).toEqual([letters[1].envelope.eventId, letters[4].envelope.eventId]);
    expect(dry).toMatchObject({ matched: 2, replayed: 0 });
    expect(reads.bodies).toBe(0);

    const one = await replayDeadLetters(bus, location, { tenantId: mine, eventIds: [letters[4].envelope.eventId] });
    expect(one).toMatchObject({ matched: 1, replayed: 1 });
    expect(reads.bodies).toBe(1);
    expect((await listDeadLetters(inner, location, { tenantId: mine })).map((l) => l.eventId)).toEqual([
      letters[1].envelope.eventId,
      letters[3].envelope.eventId,
    ]);
  });

  it('still chooses letters written before x-tenant-id, reading their bodies for the tenant', async () => {
    const [mine, other] = [newId('tenant'), newId('tenant')];
    const legacy = [letter(other), letter(mine)];
    await writeDeadLetters(inner, location, legacy, { legacy: true });
    const { bus, reads } = countingBus(inner);
    const found = await listDeadLetters(bus, location, { tenantId: mine, eventIds: legacy.map((l) => l.envelope.eventId) });
    expect(found.map((l) => l.eventId)).toEqual([legacy[1].envelope.eventId]);
    expect(reads.bodies).toBe(2);
  });

  it('replays under a message id of the DLQ sequence, new relative to the event; a letter another replay moved counts nothing', async () => {
    const tenantId = newId('tenant');
    const [first, second] = [letter(tenantId), letter(tenantId)];
    await writeDeadLetters(inner, location, [first, second]);
    const [a, b] = await listDeadLetters(inner, location, { tenantId });
    // Another replay published b's copy and has not deleted the letter yet.
    const stored = (await inner.getMessage(location.stream, b.seq))!;
    await inner.publish(subject, stored.data, { msgId: deadLetterReplayMsgId(location.stream, b.seq) });

    const replay = await replayDeadLetters(inner, location, { tenantId });
    expect(replay).toMatchObject({ matched: 2, replayed: 1 });
    expect(await listDeadLetters(inner, location, { tenantId })).toEqual([]);
    const copies = (await inner.readStream(config.events.contentStream, { filterSubject: subject })).filter((m) =>
      [first, second].some((l) => text(m.data).includes(l.envelope.eventId)),
    );
    expect(copies.map((m) => m.headers['Nats-Msg-Id'])).toEqual([
      deadLetterReplayMsgId(location.stream, b.seq),
      deadLetterReplayMsgId(location.stream, a.seq),
    ]);
    expect(copies[1].headers).toMatchObject({ 'x-replayed-from': 'dlq', 'x-dlq-seq': String(a.seq) });
    expect(await replayDeadLetters(inner, location, { tenantId })).toMatchObject({ matched: 0, replayed: 0 });
  });
});
