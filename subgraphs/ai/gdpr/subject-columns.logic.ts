import { Prisma } from '../../../platform/db/database.js';
import { ERASED_USER_ID, isId } from '../../../platform/ids.js';
import { readEnumValue } from '../../shared/enum-value.logic.js';

/*
 * Where the AI subgraph keeps a person's user id, and what an erasure does to each place. The
 * integration test (test/integration/ai/gdpr-erasure.test.ts) scans every table for the id after
 * an erasure, so a column added to a table without a line here fails it.
 */

/**
 * How a column holds the id:
 * - `text`: the id itself (claimedBy, actorId, …) or free text that may quote it (a reject reason);
 * - `json`: anywhere inside a JSON value (`review.decidedBy`, an edit diff);
 * - `array`: an element of a text array whose element stays as a record (`steeredBy`);
 * - `member`: an element of a text array of people who may act; the erased person is removed, not
 *   replaced (a zero id in a queue's members would stand for nobody).
 */
export type ColumnKind = 'text' | 'json' | 'array' | 'member';

export interface SubjectColumn {
  column: string;
  kind: ColumnKind;
}

/** A table and how its rows are tied to a tenant: its own `tenantId`, or its parent's. */
export interface SubjectTable {
  table: string;
  tenant: { column: 'tenantId' } | { parentTable: string; parentKey: string; foreignKey: string };
  columns: readonly SubjectColumn[];
  /**
   * Rows whose tenant is null are global configuration a platform operator wrote (global routing
   * rules' versions, templates, HITL policies): they belong to no tenant, so any tenant's erasure
   * of the operator reaches them, under the same retention rule as that tenant's rows.
   */
  global?: true;
}

const text = (column: string): SubjectColumn => ({ column, kind: 'text' });
const json = (column: string): SubjectColumn => ({ column, kind: 'json' });
const own = { column: 'tenantId' } as const;

/**
 * Every AI table with a column that can hold a user id. Rows of global configuration
 * (`tenantId` null: global routing rules, templates, HITL policies) are platform operators'
 * records, tied to no tenant: the tables marked `global` have them, and an erasure reaches them
 * too (docs/ai-gateway.md). Not listed, holding no person: ProviderRoutingRule, ConsumerCutover,
 * ShadowLatencySample.
 */
export const AI_SUBJECT_TABLES: readonly SubjectTable[] = [
  {
    table: 'ReviewTask',
    tenant: own,
    columns: [text('claimedBy'), text('decidedBy'), text('reason'), json('editDiff'), { column: 'steeredBy', kind: 'array' }],
  },
  { table: 'ReviewQueue', tenant: own, columns: [{ column: 'members', kind: 'member' }] },
  // subjectRef and heldText are the caller's reference and the held output: free text that may quote an id.
  { table: 'AIProvenance', tenant: own, columns: [text('actorId'), text('subjectRef'), text('heldText'), json('review')] },
  { table: 'FeatureFlag', tenant: own, columns: [text('updatedBy')] },
  { table: 'FeatureFlagChange', tenant: own, columns: [text('changedBy'), text('reason')] },
  { table: 'HITLPolicy', tenant: own, columns: [text('updatedBy')], global: true },
  { table: 'PromptTemplate', tenant: own, columns: [text('publishedBy')], global: true },
  {
    table: 'ProviderRoutingRuleVersion',
    tenant: { parentTable: 'ProviderRoutingRule', parentKey: 'id', foreignKey: 'ruleId' },
    columns: [text('createdBy')],
    global: true,
  },
  // signedBy is "a usr_ id or the signatory's name": the id is replaced; a name is not known to be the subject's.
  { table: 'DataProtectionAssessment', tenant: own, columns: [text('signedBy')] },
];

/** Why a GDPR request changes nothing in the AI subgraph: a closed set (a log field). */
export type NotAppliedReason = 'not_an_erasure' | 'subject_type_not_held' | 'subject_not_a_user_id';

export type AiGdprDecision =
  { kind: 'erase' } | { kind: 'not_applied'; reason: NotAppliedReason } | { kind: 'invalid'; message: string };

/**
 * The AI subgraph keeps user ids, never names: only an erasure of a user changes anything (and
 * then only where retention classes permit zeroing ids). Access and rectification have nothing to
 * rewrite here (an id is not rectified), and request types added later are acknowledged. A request
 * type that is no possible enum value at all is invalid, as the catalog reads it: dead-lettered.
 */
export function decideAiGdprRequest(request: { requestType: unknown; subjectType: string; subjectId: string }): AiGdprDecision {
  if (readEnumValue(request.requestType, ['erasure']) === 'invalid') {
    return { kind: 'invalid', message: `GDPR request type ${JSON.stringify(request.requestType)} is not an enum value` };
  }
  if (request.subjectType !== 'user') return { kind: 'not_applied', reason: 'subject_type_not_held' };
  if (request.requestType !== 'erasure') return { kind: 'not_applied', reason: 'not_an_erasure' };
  if (!isId('user', request.subjectId)) return { kind: 'not_applied', reason: 'subject_not_a_user_id' };
  return { kind: 'erase' };
}

const ident = (name: string): Prisma.Sql => Prisma.raw(`"${name.replaceAll('"', '""')}"`);

/**
 * The new value of a column and whether a row holds the id there. A user id is `usr_` and 26
 * Crockford characters, none of which JSON escapes, so replacing it in a JSON value's text finds
 * exactly the strings that are or quote it; and the zero id is as valid JSON as the id it replaces.
 */
function columnChange(column: SubjectColumn, userId: string): { set: Prisma.Sql; holds: Prisma.Sql } {
  const c = ident(column.column);
  switch (column.kind) {
    case 'text':
      return { set: Prisma.sql`replace(${c}, ${userId}, ${ERASED_USER_ID})`, holds: Prisma.sql`strpos(${c}, ${userId}) > 0` };
    case 'json':
      return {
        set: Prisma.sql`replace(${c}::text, ${userId}, ${ERASED_USER_ID})::jsonb`,
        holds: Prisma.sql`strpos(${c}::text, ${userId}) > 0`,
      };
    case 'array':
      // The zero id once: a task several erased admins steered lists it once.
      return {
        set: Prisma.sql`CASE WHEN ${ERASED_USER_ID} = ANY(${c}) THEN array_remove(${c}, ${userId})
                             ELSE array_replace(${c}, ${userId}, ${ERASED_USER_ID}) END`,
        holds: Prisma.sql`${userId} = ANY(${c})`,
      };
    case 'member':
      return { set: Prisma.sql`array_remove(${c}, ${userId})`, holds: Prisma.sql`${userId} = ANY(${c})` };
  }
}

/**
 * One UPDATE per table: every listed column of the tenant's rows that holds the id, rewritten; a
 * column that does not hold it is set to itself. Returns the statement; the repo runs it.
 */
export function erasureStatement(table: SubjectTable, subject: { tenantId: string; userId: string }): Prisma.Sql {
  const changes = table.columns.map((column) => ({ column, ...columnChange(column, subject.userId) }));
  const sets = changes.map(
    ({ column, set, holds }) =>
      Prisma.sql`${ident(column.column)} = CASE WHEN ${holds} THEN ${set} ELSE ${ident(column.column)} END`,
  );
  const anyHolds = Prisma.join(
    changes.map(({ holds }) => holds),
    ' OR ',
  );
  const tenantIs = (column: Prisma.Sql) =>
    table.global
      ? Prisma.sql`(${column} = ${subject.tenantId} OR ${column} IS NULL)`
      : Prisma.sql`${column} = ${subject.tenantId}`;
  const inTenant =
    'column' in table.tenant
      ? tenantIs(ident(table.tenant.column))
      : Prisma.sql`${ident(table.tenant.foreignKey)} IN (SELECT ${ident(table.tenant.parentKey)} FROM ${ident(table.tenant.parentTable)} WHERE ${tenantIs(Prisma.raw('"tenantId"'))})`;
  return Prisma.sql`UPDATE ${ident(table.table)} SET ${Prisma.join(sets, ', ')} WHERE ${inTenant} AND (${anyHolds})`;
}
