import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../../platform/ids.js';
import { verifyExport, type JsonWebKeySet } from '../../../subgraphs/ai/provenance/receipts/verify-receipts.js';
import { startSystemWithDatabase, type SystemProcess } from '../../support/system-process.js';

/**
 * Receipts through the running process's doors: the REST receipt and export under scope ai.audit
 * (tenant-checked), the public JWKS, and a key rotation by platform.admin after which the export
 * still verifies offline.
 */
const tenant = newId('tenant');
const otherTenant = newId('tenant');

let system: SystemProcess;
let close: () => Promise<void>;
let assistToken: string;
let auditToken: string;
let otherAuditToken: string;
let platformToken: string;

beforeAll(async () => {
  ({ system, close } = await startSystemWithDatabase());
  assistToken = await system.mintToken(tenant, 'ai.assist');
  auditToken = await system.mintToken(tenant, 'ai.audit');
  otherAuditToken = await system.mintToken(otherTenant, 'ai.audit');
  platformToken = await system.mintToken(tenant, 'platform.admin');
});
afterAll(async () => close?.());

async function call(path: string, token: string, init: { method?: string; body?: unknown; tenantId?: string } = {}) {
  const response = await fetch(`${system.baseUrl}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${token}`,
      'x-tenant-id': init.tenantId ?? tenant,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json', 'idempotency-key': newUlid() }),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

const assist = () =>
  call('/v1/ai/assist', assistToken, {
    method: 'POST',
    body: {
      featureKey: 'portal.triage',
      variables: { message: 'a headache for two days' },
      context: { facilityId: 'fac-1', specialty: 'general' },
    },
  });

async function publicJwks(): Promise<JsonWebKeySet> {
  const response = await fetch(`${system.baseUrl}/v1/ai/receipts/jwks.json`);
  expect(response.status).toBe(200);
  return (await response.json()) as JsonWebKeySet;
}

async function exported(): Promise<string[]> {
  const from = new Date(Date.now() - 3_600_000).toISOString();
  const to = new Date(Date.now() + 3_600_000).toISOString();
  const response = await call(`/v1/ai/receipts/export?from=${from}&to=${to}`, auditToken);
  expect(response.status, response.text).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^application\/jsonl/);
  return response.text.split('\n');
}

describe('provenance receipts over HTTP', () => {
  it('serves a receipt under ai.audit only, in the caller tenant only', async () => {
    const answered = await assist();
    expect(answered.status, answered.text).toBe(200);
    const id = answered.json().provenanceId as string;
    const receipt = await call(`/v1/ai/provenance/${id}/receipt`, auditToken);
    expect(receipt.status, receipt.text).toBe(200);
    expect(receipt.json()).toMatchObject({
      provenanceId: id,
      seq: 1,
      event: 'assist',
      kid: expect.any(String),
      jws: expect.any(String),
    });
    expect((await call(`/v1/ai/provenance/${id}/receipt`, assistToken)).json()).toMatchObject({ code: 'authz.scope_missing' });
    const foreign = await call(`/v1/ai/provenance/${id}/receipt`, otherAuditToken, { tenantId: otherTenant });
    expect(foreign.status).toBe(404);
  });

  it('exports a chain that verifies against the public JWKS across a key rotation', async () => {
    await assist();
    const before = (await exported()).filter((line) => line.includes('"type":"receipt"')).length;
    const rotated = await fetch(`${system.baseUrl}/graphql`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${platformToken}`,
        'x-tenant-id': tenant,
        'content-type': 'application/json',
        'idempotency-key': newUlid(),
      },
      body: JSON.stringify({ query: 'mutation { rotateReceiptSigningKey }' }),
    });
    const rotation = await rotated.text();
    const { data } = JSON.parse(rotation) as { data: { rotateReceiptSigningKey: string } };
    expect(data, rotation).toBeTruthy();
    expect(data.rotateReceiptSigningKey).toMatch(/^r-\d{8}-[0-9a-f]{8}$/);
    const answered = await assist();
    const receipt = await call(`/v1/ai/provenance/${answered.json().provenanceId as string}/receipt`, auditToken);
    expect(receipt.json().kid).toBe(data.rotateReceiptSigningKey);
    const jwks = await publicJwks();
    expect(jwks.keys.length).toBeGreaterThanOrEqual(2);
    const result = await verifyExport(await exported(), jwks);
    expect(result).toMatchObject({ ok: true, count: before + 1, firstSeq: 1, lastSeq: before + 1 });
  });
});
