import { describe, expect, it } from 'vitest';
import type { ConsumedEnvelope } from '../../../events/envelope.js';
import type { Tx } from '../../../platform/db/database.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { handleAiGdprRequest } from '../../../subgraphs/ai/gdpr/handle-gdpr-request.js';

/** A transaction that fails the test if the handler touches the database at all. */
const untouchable = new Proxy({} as Tx, {
  get: (_target, property) => {
    throw new Error(`the handler used tx.${String(property)}`);
  },
});

const deps = { logger: silentLogger, zeroingClasses: ['operational'] };

function request(envelopeTenant: string, payload: Record<string, unknown>): ConsumedEnvelope {
  return {
    eventId: newId('event'),
    eventType: 'gdpr.subject_request.received',
    tenantId: envelopeTenant,
    payload,
  } as unknown as ConsumedEnvelope;
}

describe('handleAiGdprRequest before any write', () => {
  it("dead-letters a request whose payload names another tenant than its envelope, touching neither tenant's rows", async () => {
    const payload = {
      requestId: 'gdpr-1',
      tenantId: newId('tenant'),
      subjectType: 'user',
      subjectId: newId('user'),
      requestType: 'erasure',
    };
    await expect(handleAiGdprRequest(untouchable, request(newId('tenant'), payload), deps)).rejects.toMatchObject({
      code: 'events.permanent_failure',
    });
  });

  it('acknowledges a request that is not an erasure of a user without touching the database', async () => {
    const tenantId = newId('tenant');
    const payload = { requestId: 'gdpr-2', tenantId, subjectType: 'user', subjectId: newId('user'), requestType: 'access' };
    await expect(handleAiGdprRequest(untouchable, request(tenantId, payload), deps)).resolves.toEqual({
      erased: false,
      rows: {},
      storedEvents: 0,
      idempotencyRecords: { deleted: 0, rewritten: 0 },
    });
  });
});
