import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../platform/ids.js';
import { listDeadLetters } from '../../../events/dead-letters/dead-letters.js';
import { permanentFailure } from '../../../events/consume/verdict.logic.js';
import { validateDeadLetterFilter } from '../../../subgraphs/catalog/dead-letters/dead-letter.logic.js';
import { replayTenantDeadLetters } from '../../../subgraphs/catalog/dead-letters/tenant-dead-letters.js';
import { stacks } from '../events/helpers.js';
import { builtPayload, consumedEnvelope, startCatalogHarness, type CatalogHarness } from './harness.js';

/**
 * Replay through the tenant door (the replayDeadLetters mutation and POST /admin/v1/catalog/dlq/replay
 * run this): producers choose event ids, so two tenants' dead letters can carry the same one.
 */
describe.each(stacks())('tenant-safe DLQ replay: $name', (stack) => {
  let h: CatalogHarness;
  const failing = new Set<string>();
  beforeAll(async () => {
    h = await startCatalogHarness(stack, {
      intercept: (envelope) => {
        if (failing.has(`${envelope.tenantId}/${envelope.eventId}`)) throw permanentFailure(`rejected for ${envelope.tenantId}`);
      },
    });
  });
  afterAll(async () => h?.stop());

  it("acts on the caller's tenant's letters only and answers only about them, even when another tenant's letter has the same eventId", async () => {
    const [tenantA, tenantB] = [newId('tenant'), newId('tenant')];
    const a = consumedEnvelope('built', builtPayload(tenantA, 'shared-id', '1.0.0'));
    const b = { ...consumedEnvelope('built', builtPayload(tenantB, 'shared-id', '1.0.0')), eventId: a.eventId };
    failing.add(`${tenantA}/${a.eventId}`).add(`${tenantB}/${b.eventId}`);
    await h.send(a);
    await h.send(b);
    await h.settled();
    const both = await listDeadLetters(h.bus, h.deadLetterStream, { eventIds: [a.eventId] });
    expect(both).toHaveLength(2);

    failing.clear();
    const dry = await replayTenantDeadLetters(
      h.bus,
      h.deadLetterStream,
      tenantA,
      validateDeadLetterFilter({ eventIds: [a.eventId], dryRun: true }),
    );
    expect(dry).toMatchObject({ matched: 1, replayed: 0, dryRun: true });
    expect(dry.letters.map((l) => l.error)).toEqual([expect.stringContaining(tenantA)]);

    const replay = await replayTenantDeadLetters(
      h.bus,
      h.deadLetterStream,
      tenantA,
      validateDeadLetterFilter({ eventIds: [a.eventId] }),
    );
    expect(replay).toMatchObject({ matched: 1, replayed: 1, dryRun: false });
    expect(replay.letters).toHaveLength(1);
    expect(JSON.stringify(replay.letters)).not.toContain(tenantB);
    h.expectMore(1);
    await h.settled();

    // A's event is handled; B's letter is still in the DLQ, untouched, and B has no course.
    expect(await h.db.prisma.course.count({ where: { tenantId: tenantA, slug: 'shared-id' } })).toBe(1);
    expect(await h.db.prisma.course.count({ where: { tenantId: tenantB } })).toBe(0);
    const left = await listDeadLetters(h.bus, h.deadLetterStream, { eventIds: [a.eventId] });
    expect(left.map((l) => l.seq)).toEqual([both.find((l) => l.error?.includes(tenantB))!.seq]);
    expect(
      await replayTenantDeadLetters(h.bus, h.deadLetterStream, tenantA, validateDeadLetterFilter({ subject: '>' })),
    ).toMatchObject({
      matched: 0,
      replayed: 0,
    });
  });
});
