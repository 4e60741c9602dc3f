import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../../platform/clock.js';
import { newId, newUlid } from '../../../platform/ids.js';
import { ASSIST, assistInput, startAiHarness, type AiHarness } from './support.js';
import { testDatabaseKind } from '../../support/database.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * The AI subgraph reads time from the one clock it is given: provenance rows, the Idempotency-Key
 * record of an answered assist (and so when a retry stops getting the recorded answer), and the
 * rules about time in admin queries all follow a manual clock the test moves.
 */
describe('the AI subgraph on a manual clock', () => {
  const clock = manualClock('2026-11-21T10:00:00.000Z');
  let ai: AiHarness;

  beforeAll(async () => {
    ai = await startAiHarness(testDatabaseKind(), { IDEMPOTENCY_TTL_SECONDS: '3600' }, { clock });
  });
  afterAll(async () => ai?.close());

  async function keyedAssist(tenantId: string, key: string, input: ReturnType<typeof assistInput>) {
    const answer = await ai.gql<{ assist: { provenanceId: string; status: string } }>(ASSIST, input, {
      tenantId,
      scope: 'ai.assist',
      sub: 'svc:clock',
      idempotencyKey: key,
    });
    expect(answer.data?.assist.status).toBe('completed');
    return answer.data!.assist;
  }

  it('stamps the provenance row and the recorded answer with the clock, and expires the answer on it', async () => {
    const tenantId = newId('tenant');
    const key = newUlid();
    const input = assistInput('portal.triage', { message: 'dizzy' });
    const first = await keyedAssist(tenantId, key, input);

    const row = await ai.db.prisma.aIProvenance.findUniqueOrThrow({ where: { id: first.provenanceId } });
    expect(row.createdAt.toISOString()).toBe('2026-11-21T10:00:00.000Z');
    expect(row.completedAt?.toISOString()).toBe('2026-11-21T10:00:00.000Z');
    const effect = await ai.db.prisma.idempotentEffect.findFirstOrThrow({ where: { key: { endsWith: `|${key}` } } });
    expect(effect.createdAt.toISOString()).toBe('2026-11-21T10:00:00.000Z');
    expect(effect.expiresAt.toISOString()).toBe('2026-11-21T11:00:00.000Z');

    clock.advance(HOUR - 1);
    expect((await keyedAssist(tenantId, key, input)).provenanceId).toBe(first.provenanceId);
    // Past the key's retention (on the subgraph's clock) the same key is a new request.
    clock.advance(1);
    const later = await keyedAssist(tenantId, key, input);
    expect(later.provenanceId).not.toBe(first.provenanceId);
    expect(await ai.db.prisma.aIProvenance.count({ where: { tenantId } })).toBe(2);
  });

  it('opens the provider key retention window by the clock', async () => {
    const as = { scope: 'ai.admin', sub: 'usr_01JD00000000000000000ADM00', tenantId: newId('tenant') };
    const cutoverAt = new Date(clock.now().getTime() - 10 * DAY).toISOString();
    const recorded = await ai.gql(
      `mutation($i: ConsumerCutoverInput!) { recordConsumerCutover(input: $i) { serviceName } }`,
      { i: { serviceName: 'chart-service', provider: 'openai', cutoverAt } },
      as,
    );
    expect(recorded.errors).toBeUndefined();
    const mayRetire = async () =>
      (await ai.gql<{ providerKeyRetention: Array<{ mayRetire: boolean }> }>(`{ providerKeyRetention { mayRetire } }`, {}, as))
        .data!.providerKeyRetention[0].mayRetire;
    expect(await mayRetire()).toBe(false);
    clock.advance(21 * DAY);
    expect(await mayRetire()).toBe(true);
  });
});
