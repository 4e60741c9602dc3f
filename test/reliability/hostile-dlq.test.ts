import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../events/bus/jetstream-bus.js';
import { listDeadLetters, type DeadLetterLocation } from '../../events/dead-letters/dead-letters.js';
import { subjectFor } from '../../events/envelope.js';
import { newId, newUlid } from '../../platform/ids.js';
import { silentLogger } from '../../platform/observability/logger.js';
import { validateDeadLetterFilter } from '../../subgraphs/catalog/dead-letters/dead-letter.logic.js';
import { replayTenantDeadLetters } from '../../subgraphs/catalog/dead-letters/tenant-dead-letters.js';
import { builtPayload, consumedEnvelope } from '../integration/catalog/harness.js';
import { countingBus, text, writeDeadLetters, type LetterDraft } from '../integration/events/helpers.js';
import { eventually } from '../support/eventually.js';
import { privateServicesAvailable, startPrivateNats, type PrivateNats } from '../support/private-services.js';
import { recordFigures } from '../support/reliability-figures.js';
import { exchange, startReliabilitySystem, type ReliabilitySystem } from '../support/reliability-system.js';

/**
 * The shared DLQ under hostile use, on the whole system (private NATS, the system's own streams):
 *
 * - concurrent replays of the same letters: each letter goes back to its subject once, the
 *   answers' `replayed` add up to the letters moved, and each event is handled once;
 * - another tenant's flood in the DLQ: a `maxCount: 1` dry run reads no body and a `maxCount: 1`
 *   replay one, however many letters (and bytes) the DLQ holds. Bodies are counted through a bus
 *   that counts what reads bring back (test/integration/events/helpers.ts), never timed.
 */
const REPLAYS = 5;
const LETTERS = 20;
const FLOOD = Number(process.env.HOSTILE_DLQ_FLOOD ?? 2_000);
const FLOOD_BODY_BYTES = 16 * 1024;
const BUILT_SUBJECT = subjectFor('content.play_package.built', 1);
const DLQ: DeadLetterLocation = { stream: 'CATALOG_DLQ', subjectPrefix: 'CATALOG.dlq' };
const tally = { replayCalls: 0, serverErrors: 0, events: 0, lost: 0, duplicated: 0 };
const notes: string[] = [];

const runs = privateServicesAvailable('hostile DLQ', ['nats-server']);

describe.runIf(runs)('hostile DLQ', () => {
  let nats: PrivateNats;
  let running: ReliabilitySystem;
  let bus: EventBus;
  const tenant = newId('tenant');
  let seq = 0;

  beforeAll(async () => {
    nats = await startPrivateNats();
    running = await startReliabilitySystem({ NATS_URL: nats.url, CONSUMER_ACK_WAIT_SECONDS: '5' });
    bus = await connectJetStreamBus(nats.url, { logger: silentLogger });
  });

  afterAll(async () => {
    await bus?.close().catch(() => undefined);
    await running?.close();
    await nats?.destroy();
    recordFigures({
      suite: 'hostile DLQ',
      faultsInjected: 0,
      eventsChecked: tally.events,
      lost: tally.lost,
      duplicated: tally.duplicated,
      requestsTried: tally.replayCalls,
      serverErrors: tally.serverErrors,
      notes,
    });
  });

  const letterOf = (tenantId: string, slug: string, pad = 0): LetterDraft => {
    const envelope = consumedEnvelope('built', builtPayload(tenantId, slug, '1.0.0', pad ? { pad: 'x'.repeat(pad) } : {}));
    return { subject: BUILT_SUBJECT, seq: ++seq, envelope };
  };

  async function restReplay(body: Record<string, unknown>) {
    tally.replayCalls += 1;
    const token = await running.system.mintToken(tenant, 'catalog.admin');
    const answer = await exchange(`${running.system.baseUrl}/admin/v1/catalog/dlq/replay`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'x-tenant-id': tenant,
        'content-type': 'application/json',
        'idempotency-key': newUlid(),
      },
      body: JSON.stringify(body),
    });
    if (answer.status >= 500) tally.serverErrors += 1;
    return answer;
  }

  it(`${REPLAYS} concurrent replays of the same ${LETTERS} letters move each letter once, and each event is handled once`, async () => {
    const letters = Array.from({ length: LETTERS }, (_, i) => letterOf(tenant, `dlq-race-${i}`));
    const eventIds = letters.map((l) => l.envelope.eventId);
    await writeDeadLetters(bus, DLQ, letters);

    const answers = await Promise.all(Array.from({ length: REPLAYS }, () => restReplay({ eventIds })));
    expect(
      answers.map((a) => a.status),
      answers.map((a) => a.text).join('\n'),
    ).toEqual(Array(REPLAYS).fill(200));
    const replayed = answers.map((a) => (a.json as { replayed: number }).replayed);
    notes.push(`${REPLAYS} concurrent replays of ${LETTERS} letters answered replayed = ${replayed.join('/')}`);
    expect(replayed.reduce((sum, n) => sum + n, 0)).toBe(LETTERS);

    // On the stream: one copy per letter. In the database: one version per event.
    const copies = (await bus.readStream('CONTENT', { filterSubject: BUILT_SUBJECT })).filter(
      (m) => m.headers['x-replayed-from'] === 'dlq',
    );
    const copiedIds = copies.map((m) => (JSON.parse(text(m.data)) as { eventId: string }).eventId);
    expect(copiedIds.sort()).toEqual([...eventIds].sort());
    const versions = await eventually(async () => {
      const count = await running.db.prisma.courseVersion.count({ where: { tenantId: tenant, sourceEventId: { in: eventIds } } });
      expect(count).toBe(LETTERS);
      return count;
    }, 'every replayed event handled');
    expect(await listDeadLetters(bus, DLQ, { eventIds })).toEqual([]);
    tally.events += LETTERS;
    tally.duplicated += copies.length - new Set(copiedIds).size + (versions - LETTERS);
  });

  it(`${REPLAYS} replays that all chose the same ${LETTERS} letters before any moved one: each letter is published once`, async () => {
    const letters = Array.from({ length: LETTERS }, (_, i) => letterOf(tenant, `dlq-lockstep-${i}`));
    const eventIds = letters.map((l) => l.envelope.eventId);
    await writeDeadLetters(bus, DLQ, letters);
    // Every replay's first publish waits until all of them got there: each has chosen all 20.
    let waiting = 0;
    let release!: () => void;
    const allChose = new Promise<void>((resolve) => (release = resolve));
    const lockstep: EventBus = {
      ...bus,
      async publish(subject, data, options) {
        waiting += 1;
        if (waiting === REPLAYS) release();
        await allChose;
        return bus.publish(subject, data, options);
      },
    };
    tally.replayCalls += REPLAYS;
    const results = await Promise.all(
      Array.from({ length: REPLAYS }, () =>
        replayTenantDeadLetters(lockstep, DLQ, tenant, validateDeadLetterFilter({ eventIds })),
      ),
    );
    expect(results.map((r) => r.matched)).toEqual(Array(REPLAYS).fill(LETTERS));
    const replayed = results.map((r) => r.replayed);
    notes.push(`${REPLAYS} replays in lockstep over ${LETTERS} letters answered replayed = ${replayed.join('/')}`);
    expect(replayed.reduce((sum, n) => sum + n, 0)).toBe(LETTERS);
    const copies = (await bus.readStream('CONTENT', { filterSubject: BUILT_SUBJECT }))
      .filter((m) => m.headers['x-replayed-from'] === 'dlq')
      .map((m) => (JSON.parse(text(m.data)) as { eventId: string }).eventId)
      .filter((id) => eventIds.includes(id));
    expect(copies.sort()).toEqual([...eventIds].sort());
    expect(await listDeadLetters(bus, DLQ, { eventIds })).toEqual([]);
    await eventually(
      async () =>
        expect(
          await running.db.prisma.courseVersion.count({ where: { tenantId: tenant, sourceEventId: { in: eventIds } } }),
        ).toBe(LETTERS),
      'every replayed event handled',
    );
    tally.events += LETTERS;
    tally.duplicated += copies.length - LETTERS;
  });

  it(`a maxCount 1 dry run reads no body and a maxCount 1 replay one, with ${FLOOD} letters of another tenant ahead`, async () => {
    const other = newId('tenant');
    await writeDeadLetters(
      bus,
      DLQ,
      Array.from({ length: FLOOD }, (_, i) => letterOf(other, `flood-${i}`, FLOOD_BODY_BYTES)),
    );
    const mine = letterOf(tenant, 'dlq-after-the-flood');
    await writeDeadLetters(bus, DLQ, [mine]);
    const depth = (await bus.streamState(DLQ.stream)).messages;
    expect(depth).toBeGreaterThan(FLOOD);

    const dry = countingBus(bus);
    const listed = await replayTenantDeadLetters(
      dry.bus,
      DLQ,
      tenant,
      validateDeadLetterFilter({ subject: '>', maxCount: 1, dryRun: true }),
    );
    expect(listed).toMatchObject({ matched: 1, replayed: 0, letters: [{ eventId: mine.envelope.eventId }] });
    expect(dry.reads).toMatchObject({ bodies: 0, bodyBytes: 0 });
    // Through the door as well: the same answer.
    const door = await restReplay({ subject: '>', maxCount: 1, dryRun: true });
    expect(door.status, door.text).toBe(200);
    expect(door.json).toEqual({ matched: 1, replayed: 0 });

    const real = countingBus(bus);
    const moved = await replayTenantDeadLetters(real.bus, DLQ, tenant, validateDeadLetterFilter({ subject: '>', maxCount: 1 }));
    expect(moved).toMatchObject({ matched: 1, replayed: 1 });
    expect(real.reads.bodies).toBe(1);
    expect(real.reads.bodyBytes).toBeLessThan(FLOOD_BODY_BYTES);
    notes.push(
      `DLQ of ${depth} letters (${FLOOD} × ${FLOOD_BODY_BYTES / 1024} KiB of another tenant): maxCount 1 dry run read ${dry.reads.headers} headers and ${dry.reads.bodies} bodies; maxCount 1 replay read ${real.reads.bodies} body (${real.reads.bodyBytes} bytes)`,
    );
    await eventually(
      async () =>
        expect(
          await running.db.prisma.courseVersion.count({ where: { tenantId: tenant, sourceEventId: mine.envelope.eventId } }),
        ).toBe(1),
      'the replayed event handled',
    );
    tally.events += 1;
  });

  it('a replay without a filter is refused with its own code; a dry run without one lists', async () => {
    const refused = await restReplay({});
    expect(refused.status, refused.text).toBe(400);
    expect(refused.json).toMatchObject({ code: 'events.replay_filter_required' });
    expect((await restReplay({ maxCount: 5 })).json).toMatchObject({ code: 'events.replay_filter_required' });
    expect((await restReplay({ dryRun: true })).status).toBe(200);
  });
});
