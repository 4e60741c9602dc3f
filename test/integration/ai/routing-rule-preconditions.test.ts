import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../../support/database.js';
import { startAiHarness, type AiHarness } from './support.js';

/**
 * Issue #33, item 6: a routing rule is versioned, so changing one that exists — a new version, or
 * another version put in force, tenant or global — is an optimistic-concurrency write: If-Match
 * with the rule's etag is required (missing: 428 request.precondition_required), a stale one is 412
 * request.precondition_failed naming the current etag, and nothing changes. Creating a rule (its
 * first version) needs none.
 */
const platform = { scope: 'platform.admin', sub: 'usr_01JD000000000000000PLATF00' };
const tenantAdmin = { scope: 'ai.admin', sub: 'usr_01JD00000000000000000ADM00' };

type GqlError = { message: string; extensions?: Record<string, unknown> };
type Rule = { ruleId: string; activeVersion: number | null; etag: string };
const RULE = 'ruleId activeVersion etag';

const UPDATE = (field: string) =>
  `mutation($id: ID!) { ${field}(ruleId: $id, input: { primary: { provider: "mock", model: "next" }, fallbacks: [] }) { ${RULE} } }`;
const ACTIVATE = (field: string) => `mutation($id: ID!) { ${field}(ruleId: $id, version: 1) { ${RULE} } }`;

const WRITES = [
  { name: 'updateRoutingRule', document: UPDATE('updateRoutingRule'), as: tenantAdmin, owner: 'tenant' },
  { name: 'activateRoutingRuleVersion', document: ACTIVATE('activateRoutingRuleVersion'), as: tenantAdmin, owner: 'tenant' },
  { name: 'updateGlobalRoutingRule', document: UPDATE('updateGlobalRoutingRule'), as: platform, owner: 'global' },
  {
    name: 'activateGlobalRoutingRuleVersion',
    document: ACTIVATE('activateGlobalRoutingRuleVersion'),
    as: platform,
    owner: 'global',
  },
] as const;

describe.each(databaseKinds())('routing rule writes under If-Match on %s', (kind) => {
  let ai: AiHarness;
  beforeAll(async () => {
    ai = await startAiHarness(kind, {});
  });
  afterAll(async () => {
    await ai?.close();
  });

  /** A rule of its own for each write, at version 2 (so activating version 1 changes it). */
  async function ruleAtVersion2(owner: 'tenant' | 'global', featureKey: string): Promise<Rule> {
    const [create, update, as] =
      owner === 'tenant'
        ? (['createRoutingRule', 'updateRoutingRule', tenantAdmin] as const)
        : (['createGlobalRoutingRule', 'updateGlobalRoutingRule', platform] as const);
    const created = await ai.gql<Record<string, Rule>>(
      `mutation { ${create}(input: { featureKey: "${featureKey}", primary: { provider: "mock", model: "first" }, fallbacks: [] }) { ${RULE} } }`,
      {},
      as,
    );
    expect(created.errors, created.raw).toBeUndefined();
    const rule = created.data![create];
    expect(rule.activeVersion).toBe(1);
    const updated = await ai.gql<Record<string, Rule>>(
      UPDATE(update),
      { id: rule.ruleId },
      { ...as, headers: { 'if-match': rule.etag } },
    );
    expect(updated.errors, updated.raw).toBeUndefined();
    return updated.data![update];
  }

  const stored = async (ruleId: string) =>
    await ai.db.prisma.providerRoutingRule.findUniqueOrThrow({ where: { id: ruleId }, include: { versions: true } });

  it.each(WRITES)('$name: no If-Match is 428 request.precondition_required, and nothing changes', async (write) => {
    const rule = await ruleAtVersion2(write.owner, `precondition.missing_${write.name.toLowerCase()}`);
    const refused = await ai.gql(write.document, { id: rule.ruleId }, write.as);
    expect((refused.errors as GqlError[] | undefined)?.[0]?.extensions, refused.raw).toMatchObject({
      code: 'request.precondition_required',
      status: 428,
    });
    const after = await stored(rule.ruleId);
    expect([after.activeVersion, after.versions.length]).toEqual([2, 2]);
  });

  it.each(WRITES)('$name: a stale If-Match is 412 request.precondition_failed naming the current etag', async (write) => {
    const rule = await ruleAtVersion2(write.owner, `precondition.stale_${write.name.toLowerCase()}`);
    const refused = await ai.gql(write.document, { id: rule.ruleId }, { ...write.as, headers: { 'if-match': '"1.1"' } });
    expect((refused.errors as GqlError[] | undefined)?.[0]?.extensions, refused.raw).toMatchObject({
      code: 'request.precondition_failed',
      status: 412,
      etag: rule.etag,
    });
    const after = await stored(rule.ruleId);
    expect([after.activeVersion, after.versions.length]).toEqual([2, 2]);
  });

  it.each(WRITES)('$name: the current etag passes and the answer carries the new one', async (write) => {
    const rule = await ruleAtVersion2(write.owner, `precondition.current_${write.name.toLowerCase()}`);
    const done = await ai.gql<Record<string, Rule>>(
      write.document,
      { id: rule.ruleId },
      { ...write.as, headers: { 'if-match': rule.etag } },
    );
    expect(done.errors, done.raw).toBeUndefined();
    const changed = done.data![write.name];
    expect(changed.etag).not.toBe(rule.etag);
    expect(changed.etag).toMatch(/^"\d+\.\d+"$/);
  });

  it('reads a bare etag (no quotes) as the tag, as for quota settings and courses', async () => {
    const rule = await ruleAtVersion2('tenant', 'precondition.bare_tag');
    const done = await ai.gql<{ activateRoutingRuleVersion: Rule }>(
      ACTIVATE('activateRoutingRuleVersion'),
      { id: rule.ruleId },
      { ...tenantAdmin, headers: { 'if-match': rule.etag.slice(1, -1) } },
    );
    expect(done.errors, done.raw).toBeUndefined();
    expect(done.data!.activateRoutingRuleVersion.activeVersion).toBe(1);
  });

  it('creating a rule (its first version) needs no If-Match', async () => {
    const created = await ai.gql<{ createRoutingRule: Rule }>(
      `mutation { createRoutingRule(input: { featureKey: "precondition.create", primary: { provider: "mock", model: "m" }, fallbacks: [] }) { ${RULE} } }`,
      {},
      tenantAdmin,
    );
    expect(created.errors, created.raw).toBeUndefined();
    expect(created.data!.createRoutingRule).toMatchObject({ activeVersion: 1, etag: '"1.1"' });
  });
});
