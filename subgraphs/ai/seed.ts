import type { Db } from '../../platform/db/database.js';
import { newId } from '../../platform/ids.js';
import type { Logger } from '../../platform/observability/logger.js';
import { BASELINE_HITL_POLICIES, BASELINE_TEMPLATES, baselineRoutingRule } from './baseline.js';
import { templateHash, templateVariables } from './templates/template.logic.js';

const SYSTEM_ACTOR = 'system:seed';

/**
 * Idempotent: creates only what is missing, so every start (and every replica) may run it. A
 * transaction-scoped advisory lock keeps two replicas starting together from both inserting.
 */
export async function seedBaseline(db: Db, options: { hostedModel: string; logger: Logger }): Promise<void> {
  await db.$transaction(async (tx) => {
    await tx.$executeRawUnsafe('SELECT pg_advisory_xact_lock(4242001)');
    const globalRule = await tx.providerRoutingRule.findFirst({ where: { tenantId: null, featureKey: null, residency: null } });
    if (!globalRule) {
      const id = newId('routingRule');
      const rule = baselineRoutingRule(options.hostedModel);
      await tx.providerRoutingRule.create({
        data: {
          id,
          activeVersion: 1,
          versions: { create: { version: 1, primary: rule.primary, fallbacks: rule.fallbacks, createdBy: SYSTEM_ACTOR } },
        },
      });
      options.logger.info({ ruleId: id }, 'seeded the global routing rule');
    }
    for (const template of BASELINE_TEMPLATES) {
      const existing = await tx.promptTemplate.findFirst({ where: { tenantId: null, featureKey: template.featureKey } });
      if (existing) continue;
      const variables = templateVariables(template.body);
      const hash = templateHash({ featureKey: template.featureKey, body: template.body, variables });
      const id = newId('promptTemplate');
      await tx.promptTemplate.create({
        data: {
          id,
          featureKey: template.featureKey,
          version: 1,
          body: template.body,
          variables,
          hash,
          active: true,
          publishedBy: SYSTEM_ACTOR,
        },
      });
      options.logger.info({ templateId: id, featureKey: template.featureKey, version: 1, hash }, 'prompt template published');
    }
    for (const policy of BASELINE_HITL_POLICIES) {
      // Global policies (tenantId null) are not covered by the unique index (NULLs are distinct):
      // the advisory lock above is what keeps this to one row.
      const existing = await tx.hITLPolicy.findFirst({ where: { tenantId: null, featureKey: policy.featureKey } });
      if (existing) continue;
      const id = newId('hitlPolicy');
      await tx.hITLPolicy.create({ data: { id, featureKey: policy.featureKey, mode: policy.mode, updatedBy: SYSTEM_ACTOR } });
      options.logger.info({ policyId: id, featureKey: policy.featureKey, mode: policy.mode }, 'seeded the global HITL policy');
    }
  });
}
