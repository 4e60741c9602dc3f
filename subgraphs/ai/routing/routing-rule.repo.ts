import type { Db, Prisma, Tx } from '../../../platform/db/database.js';
import { AppError, notFound } from '../../../platform/errors/errors.js';
import { newId } from '../../../platform/ids.js';
import type {
  ProviderRoutingRule as RuleRow,
  ProviderRoutingRuleVersion as VersionRow,
} from '../../../prisma/generated/client.js';
import { requireIfMatch } from '../../../platform/http/conditional.logic.js';
import { routingRuleEtag, type RuleCandidate, type RuleScope, type Target } from './routing.logic.js';
import type { ProviderRoutingRule, ProviderTarget } from './routing-rule.type.js';

export type RuleWithVersions = RuleRow & { versions: VersionRow[] };

/** Rules a tenant sees: the global ones and its own overrides. */
export function listVisibleRules(db: Db, tenantId: string, featureKey?: string): Promise<RuleWithVersions[]> {
  return db.providerRoutingRule.findMany({
    where: {
      OR: [{ tenantId: null }, { tenantId }],
      ...(featureKey ? { AND: [{ OR: [{ featureKey: null }, { featureKey }] }] } : {}),
    },
    include: { versions: { orderBy: { version: 'asc' } } },
    orderBy: { createdAt: 'asc' },
  });
}

export function findVisibleRule(db: Db | Tx, tenantId: string, ruleId: string): Promise<RuleWithVersions | null> {
  return db.providerRoutingRule.findFirst({
    where: { id: ruleId, OR: [{ tenantId: null }, { tenantId }] },
    include: { versions: { orderBy: { version: 'asc' } } },
  });
}

/** The rules that may route a request of `tenantId` for `featureKey`, each with its active version only. */
export async function loadRuleCandidates(db: Db, tenantId: string, featureKey: string): Promise<RuleCandidate[]> {
  const rows = await db.providerRoutingRule.findMany({
    where: {
      activeVersion: { not: null },
      OR: [{ tenantId: null }, { tenantId }],
      AND: [{ OR: [{ featureKey: null }, { featureKey }] }],
    },
    include: { versions: true },
  });
  return rows.map((row) => {
    const active = row.versions.find((v) => v.version === row.activeVersion);
    return {
      ruleId: row.id,
      tenantId: row.tenantId,
      featureKey: row.featureKey,
      residency: row.residency,
      // A rule whose active version row is missing cannot route; treat it as inactive.
      activeVersion: active ? row.activeVersion : null,
      primary: active?.primary as unknown as Target | undefined,
      fallbacks: (active?.fallbacks as unknown as Target[] | undefined) ?? [],
    };
  });
}

export function toRoutingRule(row: RuleWithVersions): ProviderRoutingRule {
  return {
    ruleId: row.id,
    tenantId: row.tenantId,
    featureKey: row.featureKey,
    residency: row.residency,
    activeVersion: row.activeVersion,
    etag: ruleEtag(row),
    versions: row.versions.map((v) => ({
      version: v.version,
      primary: v.primary as unknown as ProviderTarget,
      fallbacks: v.fallbacks as unknown as ProviderTarget[],
      createdBy: v.createdBy,
      createdAt: v.createdAt,
    })),
  };
}

export function ruleEtag(rule: RuleWithVersions): string {
  return routingRuleEtag(
    rule.activeVersion,
    rule.versions.map((v) => v.version),
  );
}

/**
 * The precondition of a change of an existing rule: a client's write carries its If-Match header
 * (`header`, missing or not), checked against the rule as locked; absent for a change the service
 * derives itself (assignOnPremRouting names no rule and no version, and asking twice is a no-op).
 */
export interface RulePrecondition {
  ifMatch?: { header: string | undefined };
}

const json = (value: unknown) => value as Prisma.InputJsonValue;

/** Serialises admin writes of one key (a tenant's rule scopes, or one rule) across replicas. */
async function lock(tx: Tx, key: string): Promise<void> {
  await tx.$executeRawUnsafe('SELECT pg_advisory_xact_lock(hashtext($1))', key);
}

/** The rules of nobody's tenant: the platform's defaults every tenant inherits. */
export function listGlobalRules(db: Db): Promise<RuleWithVersions[]> {
  return db.providerRoutingRule.findMany({
    where: { tenantId: null },
    include: { versions: { orderBy: { version: 'asc' } } },
    orderBy: { createdAt: 'asc' },
  });
}

/**
 * A new rule at version 1, active: a tenant override, or a global rule when `tenantId` is null
 * (platform.admin). One rule per owner, feature and residency: a second one is a conflict, not a tie.
 */
export async function insertRule(
  tx: Tx,
  input: RuleScope & { tenantId: string | null; primary: Target; fallbacks: Target[]; createdBy: string },
): Promise<RuleWithVersions> {
  await lock(tx, `ai.rules:${input.tenantId ?? '*global*'}`);
  const existing = await tx.providerRoutingRule.findFirst({
    where: { tenantId: input.tenantId, featureKey: input.featureKey, residency: input.residency },
    select: { id: true },
  });
  if (existing) {
    const owner = input.tenantId === null ? 'There is already a global' : 'The tenant already has a';
    throw new AppError('request.conflict', `${owner} routing rule for this feature and residency; update it instead`, {
      details: { ruleId: existing.id },
    });
  }
  const id = newId('routingRule');
  return tx.providerRoutingRule.create({
    data: {
      id,
      tenantId: input.tenantId,
      featureKey: input.featureKey,
      residency: input.residency,
      activeVersion: 1,
      versions: {
        create: { version: 1, primary: json(input.primary), fallbacks: json(input.fallbacks), createdBy: input.createdBy },
      },
    },
    include: { versions: { orderBy: { version: 'asc' } } },
  });
}

/**
 * Loads a rule for a change by its owner: `tenantId` changes only its own rules (another tenant's
 * is not found, a global one is 403 routing.global_rule_forbidden); null (platform.admin) changes
 * only global rules (a tenant's rule is not found: the platform scope does not reach into tenants).
 */
async function ruleForChange(
  tx: Tx,
  tenantId: string | null,
  ruleId: string,
  precondition: RulePrecondition,
): Promise<RuleWithVersions> {
  await lock(tx, `ai.rule:${ruleId}`);
  const rule = await tx.providerRoutingRule.findFirst({
    where: { id: ruleId, OR: [{ tenantId: null }, ...(tenantId === null ? [] : [{ tenantId }])] },
    include: { versions: { orderBy: { version: 'asc' } } },
  });
  if (!rule) throw notFound('Routing rule');
  if (tenantId !== null && rule.tenantId === null) {
    throw new AppError(
      'routing.global_rule_forbidden',
      'Global routing rules are changed with the platform.admin scope (updateGlobalRoutingRule); create a tenant override instead',
      { status: 403 },
    );
  }
  if (precondition.ifMatch) requireIfMatch(precondition.ifMatch.header, ruleEtag(rule), 'routing rule');
  return rule;
}

export async function insertRuleVersion(
  tx: Tx,
  input: {
    /** The rule's owner; null for a global rule. */
    tenantId: string | null;
    ruleId: string;
    primary: Target;
    fallbacks: Target[];
    createdBy: string;
    expectedActiveVersion?: number | null;
  } & RulePrecondition,
): Promise<{ rule: RuleWithVersions; previousVersion: number | null }> {
  const rule = await ruleForChange(tx, input.tenantId, input.ruleId, input);
  if (input.expectedActiveVersion != null && input.expectedActiveVersion !== rule.activeVersion) {
    throw new AppError('request.precondition_failed', 'The rule changed since it was read', {
      details: { activeVersion: rule.activeVersion },
    });
  }
  const version = Math.max(0, ...rule.versions.map((v) => v.version)) + 1;
  await tx.providerRoutingRuleVersion.create({
    data: {
      ruleId: rule.id,
      version,
      primary: json(input.primary),
      fallbacks: json(input.fallbacks),
      createdBy: input.createdBy,
    },
  });
  const updated = await tx.providerRoutingRule.update({
    where: { id: rule.id },
    data: { activeVersion: version },
    include: { versions: { orderBy: { version: 'asc' } } },
  });
  return { rule: updated, previousVersion: rule.activeVersion };
}

export async function setActiveVersion(
  tx: Tx,
  input: { tenantId: string | null; ruleId: string; version: number } & RulePrecondition,
): Promise<{ rule: RuleWithVersions; previousVersion: number | null }> {
  const rule = await ruleForChange(tx, input.tenantId, input.ruleId, input);
  if (!rule.versions.some((v) => v.version === input.version)) {
    throw new AppError('request.not_found', `The rule has no version ${input.version}`, {
      details: { versions: rule.versions.map((v) => v.version) },
    });
  }
  const updated = await tx.providerRoutingRule.update({
    where: { id: rule.id },
    data: { activeVersion: input.version },
    include: { versions: { orderBy: { version: 'asc' } } },
  });
  return { rule: updated, previousVersion: rule.activeVersion };
}
