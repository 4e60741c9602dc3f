import type { Clock } from '../../../platform/clock.js';
import type { Db, Tx } from '../../../platform/db/database.js';
import type { PromptTemplate as TemplateRow } from '../../../prisma/generated/client.js';
import type { TenantQuota } from '../quota/quota.service.js';
import { loadRuleCandidates } from '../routing/routing-rule.repo.js';
import type { RuleCandidate } from '../routing/routing.logic.js';
import { findActiveTemplate } from '../templates/template.repo.js';
import { FLAG_NAMES, flagValue, resolveFlag } from '../flags/feature-flag.logic.js';

export interface TenantProfile {
  quota: TenantQuota;
  retentionClass: string;
  dataResidency: string;
}

/** Everything an assist request reads before calling a model: one round of parallel queries. */
export interface AssistSnapshot {
  tenant: TenantProfile;
  template: TemplateRow | null;
  rules: RuleCandidate[];
  hitlMode: string | null;
  flags: { hitlEnabled: boolean; moderationEnabled: boolean; multiProviderEnabled: boolean };
}

/** Defaults of the TenantSettings columns, for tenants that have no settings row. */
export const DEFAULT_TENANT: TenantProfile = {
  quota: { enabled: false, requestsPerMinute: 600, tokensPerDay: 2_000_000 },
  retentionClass: 'operational',
  dataResidency: 'EU',
};

export async function loadTenantProfile(db: Db, tenantId: string): Promise<TenantProfile> {
  const row = await db.tenantSettings.findUnique({ where: { tenantId } });
  if (!row) return DEFAULT_TENANT;
  return {
    quota: { enabled: row.quotaEnabled, requestsPerMinute: row.requestsPerMinute, tokensPerDay: row.tokensPerDay },
    retentionClass: row.retentionClass,
    dataResidency: row.dataResidency,
  };
}

export async function loadAssistSnapshot(db: Db, tenantId: string, featureKey: string): Promise<AssistSnapshot> {
  const [tenant, template, rules, policies, flagRows] = await Promise.all([
    loadTenantProfile(db, tenantId),
    findActiveTemplate(db, tenantId, featureKey),
    loadRuleCandidates(db, tenantId, featureKey),
    db.hITLPolicy.findMany({ where: { featureKey, OR: [{ tenantId }, { tenantId: null }] } }),
    db.featureFlag.findMany({ where: { tenantId, featureKey: { in: [featureKey, '*'] }, flag: { in: [...FLAG_NAMES] } } }),
  ]);
  const policy = policies.find((p) => p.tenantId === tenantId) ?? policies.find((p) => p.tenantId === null);
  // quota.enabled (phase 3, "enabled by config quota.enabled=true per tenant") overrides the
  // tenant's settings row when set, in either direction, so it is also a rollback switch.
  const quotaFlag = flagValue(flagRows, featureKey, 'quota.enabled');
  return {
    tenant: quotaFlag === undefined ? tenant : { ...tenant, quota: { ...tenant.quota, enabled: quotaFlag } },
    template,
    rules,
    hitlMode: policy?.mode ?? null,
    flags: {
      hitlEnabled: resolveFlag(flagRows, featureKey, 'hitl.enabled'),
      moderationEnabled: resolveFlag(flagRows, featureKey, 'moderation.enabled'),
      multiProviderEnabled: resolveFlag(flagRows, featureKey, 'multiProvider.enabled'),
    },
  };
}

/** Which of `residencies` the tenant holds a signed assessment for (no query when none needs one). */
export async function signedAssessments(
  db: Db,
  tenantId: string,
  residencies: readonly string[],
  now: Date,
): Promise<Set<string>> {
  if (residencies.length === 0) return new Set();
  const rows = await db.dataProtectionAssessment.findMany({
    where: { tenantId, residency: { in: [...residencies] }, signedAt: { lte: now } },
    select: { residency: true },
    distinct: ['residency'],
  });
  return new Set(rows.map((row) => row.residency));
}

export async function hasSignedAssessment(db: Db | Tx, tenantId: string, residency: string, now: Date): Promise<boolean> {
  const row = await db.dataProtectionAssessment.findFirst({
    where: { tenantId, residency, signedAt: { lte: now } },
    select: { id: true },
  });
  return row !== null;
}

/**
 * A short per-process cache of snapshots: rules, templates and settings change rarely and a hot
 * path that reads five tables per request would dominate the gateway's own latency. Writes made
 * through this process clear it at once; other replicas see a change within `ttlMs`.
 */
export class SnapshotCache {
  private readonly entries = new Map<string, { at: number; value: Promise<AssistSnapshot> }>();

  constructor(
    private readonly ttlMs: number,
    private readonly clock: Clock,
  ) {}

  get(tenantId: string, featureKey: string, load: () => Promise<AssistSnapshot>): Promise<AssistSnapshot> {
    if (this.ttlMs <= 0) return load();
    const key = `${tenantId}\u0000${featureKey}`;
    const hit = this.entries.get(key);
    const nowMs = this.clock.now().getTime();
    if (hit && nowMs - hit.at < this.ttlMs) return hit.value;
    const value = load();
    this.entries.set(key, { at: nowMs, value });
    // A failed load must not be served from the cache.
    value.catch(() => {
      if (this.entries.get(key)?.value === value) this.entries.delete(key);
    });
    if (this.entries.size > 10_000) this.entries.delete(this.entries.keys().next().value as string);
    return value;
  }

  clear(): void {
    this.entries.clear();
  }
}
