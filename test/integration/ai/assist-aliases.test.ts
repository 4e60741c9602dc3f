import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../../platform/ids.js';
import { assistInput, startAiHarness, type AiHarness } from './support.js';
import { testDatabaseKind } from '../../support/database.js';

/**
 * Issue #24, item 7: one refused `assist` alias no longer voids the others. The field is nullable:
 * the refused alias is null with its error at its own path, the others keep the outputs they
 * produced (and were recorded and charged for). On the AI subgraph's own door a retry with the
 * same Idempotency-Key gets each answered alias back from its effect row — same provenance, no
 * second charge — and runs the refused one again.
 */

const FROZEN = new Date('2026-11-21T10:15:30Z');
const THREE = `mutation Three($input: AssistInput!) {
  first: assist(input: $input) { provenanceId status }
  second: assist(input: $input) { provenanceId status }
  third: assist(input: $input) { provenanceId status }
}`;

type Answer = { provenanceId: string; status: string } | null;

describe('several assists in one mutation, one refused by the quota', () => {
  let ai: AiHarness;
  beforeAll(async () => {
    ai = await startAiHarness(testDatabaseKind(), {}, { clock: { now: () => FROZEN } });
  });
  afterAll(async () => {
    await ai?.close();
  });

  it('answers the refused alias null with its error at its path, and the others with their outputs', async () => {
    const tenantId = newId('tenant');
    await ai.db.prisma.tenantSettings.create({ data: { tenantId, quotaEnabled: true, requestsPerMinute: 2, tokensPerDay: 0 } });
    const key = newUlid();
    const variables = assistInput('portal.triage', { message: 'dizzy' });
    const result = await ai.gql<Record<string, Answer>>(THREE, variables, { tenantId, scope: 'ai.assist', idempotencyKey: key });

    expect(result.status).toBe(200);
    expect(result.data, result.raw).not.toBeNull();
    expect(result.data!.first).toMatchObject({ status: 'completed' });
    expect(result.data!.second).toMatchObject({ status: 'completed' });
    expect(result.data!.third).toBeNull();
    expect(result.errors).toHaveLength(1);
    expect(result.errors![0]).toMatchObject({
      path: ['third'],
      extensions: { code: 'quota.exceeded', status: 429, limit: 'requests_per_minute' },
    });
    const produced = [result.data!.first!.provenanceId, result.data!.second!.provenanceId];
    expect(await ai.db.prisma.aIProvenance.findMany({ where: { tenantId }, select: { id: true } })).toEqual(
      expect.arrayContaining(produced.map((id) => ({ id }))),
    );

    // The retry: the answered aliases come back from their effect rows, nothing is run or charged twice.
    const retry = await ai.gql<Record<string, Answer>>(THREE, variables, { tenantId, scope: 'ai.assist', idempotencyKey: key });
    expect([retry.data!.first?.provenanceId, retry.data!.second?.provenanceId]).toEqual(produced);
    expect(retry.data!.third).toBeNull();
    expect(retry.errors![0]).toMatchObject({ path: ['third'], extensions: { code: 'quota.exceeded' } });
    expect(await ai.db.prisma.aIProvenance.count({ where: { tenantId } })).toBe(2);
  });
});
