import { describe, expect, it } from 'vitest';
import { ERASED_USER_ID, newId } from '../../../platform/ids.js';
import { AI_SUBJECT_TABLES, decideAiGdprRequest, erasureStatement } from '../../../subgraphs/ai/gdpr/subject-columns.logic.js';

const USER = newId('user');
const TENANT = newId('tenant');

describe('decideAiGdprRequest', () => {
  it('erases only on an erasure of a user id', () => {
    expect(decideAiGdprRequest({ requestType: 'erasure', subjectType: 'user', subjectId: USER })).toEqual({ kind: 'erase' });
  });

  it.each([
    [{ requestType: 'access', subjectType: 'user', subjectId: USER }, 'not_an_erasure'],
    [{ requestType: 'rectification', subjectType: 'user', subjectId: USER }, 'not_an_erasure'],
    [{ requestType: 'restriction', subjectType: 'user', subjectId: USER }, 'not_an_erasure'],
    [{ requestType: 'erasure', subjectType: 'learner', subjectId: USER }, 'subject_type_not_held'],
    [{ requestType: 'erasure', subjectType: 'user', subjectId: 'jane@example.org' }, 'subject_not_a_user_id'],
  ])('acknowledges %o without changing anything: %s', (request, reason) => {
    expect(decideAiGdprRequest(request)).toEqual({ kind: 'not_applied', reason });
  });

  // Found by the hostile-input suite: the catalog dead-letters these, the AI consumer acknowledged them.
  it.each(['', 42, null, 'no spaces allowed'])(
    'refuses a request type %o that is no enum value at all, as the catalog does',
    (requestType) => {
      expect(decideAiGdprRequest({ requestType, subjectType: 'user', subjectId: USER })).toMatchObject({ kind: 'invalid' });
      expect(decideAiGdprRequest({ requestType, subjectType: 'learner', subjectId: USER })).toMatchObject({ kind: 'invalid' });
    },
  );
});

describe('erasureStatement', () => {
  const statementOf = (table: string) =>
    erasureStatement(
      AI_SUBJECT_TABLES.find((t) => t.table === table)!,
      { tenantId: TENANT, userId: USER },
    );

  it("updates only the request's tenant's rows, by their own tenantId or their parent's", () => {
    const task = statementOf('ReviewTask');
    expect(task.text).toMatch(/^UPDATE "ReviewTask" SET .* WHERE "tenantId" = \$\d+ AND \(/s);
    expect(task.text).not.toContain('IS NULL');
    expect(task.values).toContain(TENANT);
    const version = statementOf('ProviderRoutingRuleVersion');
    expect(version.text).toMatch(
      /WHERE "ruleId" IN \(SELECT "id" FROM "ProviderRoutingRule" WHERE \("tenantId" = \$\d+ OR "tenantId" IS NULL\)\)/,
    );
    expect(version.values).toContain(TENANT);
  });

  it('also reaches the global configuration rows (no tenant), in the tables that have them and only there', () => {
    const global = AI_SUBJECT_TABLES.filter((t) => t.global).map((t) => t.table);
    expect(global.sort()).toEqual(['HITLPolicy', 'PromptTemplate', 'ProviderRoutingRuleVersion']);
    for (const table of ['HITLPolicy', 'PromptTemplate']) {
      expect(statementOf(table).text, table).toMatch(/WHERE \("tenantId" = \$\d+ OR "tenantId" IS NULL\) AND \(/);
    }
    for (const table of AI_SUBJECT_TABLES.filter((t) => !t.global)) {
      expect(statementOf(table.table).text, table.table).not.toContain('IS NULL');
    }
  });

  it('replaces the id by the erased id, and removes it from queue members', () => {
    const task = statementOf('ReviewTask');
    expect(task.values).toEqual(expect.arrayContaining([USER, ERASED_USER_ID]));
    expect(task.text).toContain('array_replace("steeredBy"');
    const queue = statementOf('ReviewQueue');
    expect(queue.text).toMatch(/array_remove\("members", \$\d+\)/);
    expect(queue.values).not.toContain(ERASED_USER_ID);
  });

  it('lists every table once, each with a tenant and at least one column', () => {
    const names = AI_SUBJECT_TABLES.map((t) => t.table);
    expect(new Set(names).size).toBe(names.length);
    for (const table of AI_SUBJECT_TABLES) expect(table.columns.length, table.table).toBeGreaterThan(0);
  });
});
