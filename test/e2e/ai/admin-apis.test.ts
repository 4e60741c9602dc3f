import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../../platform/ids.js';
import { exchange, graphqlRequest, type HttpAnswer } from '../../support/reliability-system.js';
import { startSystemWithDatabase, type SystemWithDatabase } from '../../support/system-process.js';

/**
 * Issue #25, item 5, on the running process through the gateway: the REST quota routes follow the
 * REST conventions (ETag / If-None-Match, If-Match 428/412, Idempotency-Key replay, problem+json)
 * and are audited; the global routing rules change with platform.admin over GraphQL, audited, and
 * a tenant admin is refused with a stable 403.
 */

const tenant = newId('tenant');
const ADMIN = 'usr_01JD00000000000000000ADM00';
const OPERATOR = 'usr_01JD000000000000000PLATF00';
const QUOTA = '/v1/admin/quota';

let running: SystemWithDatabase;
let adminToken: string;
let operatorToken: string;

beforeAll(async () => {
  running = await startSystemWithDatabase({ AI_CONFIG_CACHE_MS: '0' });
  adminToken = await running.system.mintToken(tenant, 'ai.admin ai.assist', { subject: ADMIN });
  operatorToken = await running.system.mintToken(tenant, 'platform.admin', { subject: OPERATOR });
});
afterAll(async () => {
  await running?.close();
});

function rest(method: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  return exchange(`${running.system.baseUrl}${QUOTA}`, {
    method,
    headers: {
      authorization: `Bearer ${adminToken}`,
      'x-tenant-id': tenant,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

function gql(
  token: string,
  query: string,
  variables: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<HttpAnswer> {
  return graphqlRequest(
    `${running.system.baseUrl}/graphql`,
    { query, variables },
    { authorization: `Bearer ${token}`, 'x-tenant-id': tenant, 'idempotency-key': newUlid(), ...headers },
  );
}

const auditsOf = async (eventType: string) =>
  (await running.db.prisma.outboxEvent.findMany({ where: { eventType, tenantId: tenant } })).map(
    (row) => (row.envelope as { payload: Record<string, unknown> }).payload,
  );

describe('quota settings over REST', () => {
  it('reads with an ETag, replaces under If-Match and Idempotency-Key, and audits the change', async () => {
    const read = await rest('GET');
    expect(read.status).toBe(200);
    expect(read.json).toMatchObject({ enabled: false, requestsPerMinute: 600, tokensPerDay: 2_000_000, updatedAt: null });
    const etag = read.headers.get('etag')!;
    expect(etag).toBe(read.json.etag);
    expect((await rest('GET', undefined, { 'if-none-match': etag })).status).toBe(304);

    const body = { enabled: true, requestsPerMinute: 90, tokensPerDay: 100_000 };
    expect((await rest('PUT', body, { 'idempotency-key': newUlid() })).status).toBe(428);
    const stale = await rest('PUT', body, { 'idempotency-key': newUlid(), 'if-match': '"stale"' });
    expect(stale.status).toBe(412);
    expect(stale.headers.get('content-type')).toContain('application/problem+json');
    expect(stale.json).toMatchObject({ code: 'request.precondition_failed', etag });

    const key = newUlid();
    const put = await rest('PUT', body, { 'idempotency-key': key, 'if-match': etag });
    expect(put.status, put.text).toBe(200);
    expect(put.json).toMatchObject(body);
    expect(put.headers.get('etag')).toBe(put.json.etag);
    expect(put.json.etag).not.toBe(etag);
    // The same key again: the stored answer, though its If-Match is stale by now.
    const replay = await rest('PUT', body, { 'idempotency-key': key, 'if-match': etag });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(put.text);

    expect((await rest('GET')).json).toEqual(put.json);
    const audits = await auditsOf('audit.ai.quota_settings_changed');
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({
      actor: { id: ADMIN },
      details: { ...body, previous: { enabled: false, requestsPerMinute: 600, tokensPerDay: 2_000_000 } },
    });
  });
});

describe('global routing rules over GraphQL', () => {
  const RULES = '{ globalRoutingRules { ruleId activeVersion etag } }';
  const UPDATE = `mutation($id: ID!) { updateGlobalRoutingRule(ruleId: $id, input: { primary: { provider: "mock", model: "platform-e2e" }, fallbacks: [] }) { ruleId activeVersion etag } }`;

  it('the platform operator versions a global rule, audited; a tenant admin is refused with 403', async () => {
    const listed = await gql(operatorToken, RULES);
    expect(listed.json.errors, listed.text).toBeUndefined();
    const rule = listed.json.data.globalRoutingRules[0] as { ruleId: string; activeVersion: number; etag: string };

    const refused = await gql(adminToken, UPDATE, { id: rule.ruleId });
    expect(refused.json.errors[0].extensions).toMatchObject({
      code: 'authz.scope_missing',
      status: 403,
      acceptedScopes: ['platform.admin'],
    });
    const viaTenantMutation = await gql(
      adminToken,
      `mutation($id: ID!) { activateRoutingRuleVersion(ruleId: $id, version: 1) { ruleId } }`,
      { id: rule.ruleId },
    );
    expect(viaTenantMutation.json.errors[0].extensions).toMatchObject({ code: 'routing.global_rule_forbidden', status: 403 });

    // The gateway forwards If-Match to the subgraph: without it the write is 428.
    const unconditional = await gql(operatorToken, UPDATE, { id: rule.ruleId });
    expect(unconditional.json.errors[0].extensions).toMatchObject({ code: 'request.precondition_required', status: 428 });
    const updated = await gql(operatorToken, UPDATE, { id: rule.ruleId }, { 'if-match': rule.etag });
    expect(updated.json.errors, updated.text).toBeUndefined();
    expect(updated.json.data.updateGlobalRoutingRule.activeVersion).toBe(rule.activeVersion + 1);
    const rolledBack = await gql(
      operatorToken,
      `mutation($id: ID!, $v: Int!) { activateGlobalRoutingRuleVersion(ruleId: $id, version: $v) { activeVersion } }`,
      { id: rule.ruleId, v: rule.activeVersion },
      { 'if-match': updated.json.data.updateGlobalRoutingRule.etag },
    );
    expect(rolledBack.json.data.activateGlobalRoutingRuleVersion.activeVersion).toBe(rule.activeVersion);

    const [change] = await auditsOf('audit.ai.global_routing_rule_updated');
    expect(change).toMatchObject({ actor: { id: OPERATOR }, target: { id: rule.ruleId }, details: { scope: 'global' } });
    expect(await auditsOf('audit.ai.global_routing_rule_version_activated')).toHaveLength(1);
  });
});
