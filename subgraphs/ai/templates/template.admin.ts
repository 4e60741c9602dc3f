import { keyedTransaction } from '../../../platform/idempotency/effect-store.js';
import type { Tx } from '../../../platform/db/database.js';
import type { Logger } from '../../../platform/observability/logger.js';
import type { PromptTemplate as TemplateRow } from '../../../prisma/generated/client.js';
import { actorOf } from '../assist/assist.logic.js';
import { loadTenantProfile } from '../assist/assist.repo.js';
import { onClock, type ChangeStore } from '../audit/audited-change.js';
import type { AdminCaller } from '../admin-caller.js';
import { validateFeatureKey } from '../routing/routing.logic.js';
import { validateTemplateBody } from './template.logic.js';
import { activateTemplateVersion, insertTemplateVersion } from './template.repo.js';

export interface TemplateAdmin {
  publish(caller: AdminCaller, input: { featureKey: string; body: string }): Promise<TemplateRow>;
  activate(caller: AdminCaller, templateId: string): Promise<TemplateRow>;
}

/** Tenant template versions: published immutable, hashed, logged and audited; rollback re-activates one. */
export function createTemplateAdmin(
  deps: ChangeStore & {
    maxChars: number;
    onChange: () => void;
    logger: Logger;
  },
): TemplateAdmin {
  async function audited(
    caller: AdminCaller,
    action: string,
    change: (tx: Tx) => Promise<{ row: TemplateRow; previous: TemplateRow | null }>,
  ): Promise<TemplateRow> {
    const profile = await loadTenantProfile(deps.db, caller.tenantId);
    const { row, previous } = await keyedTransaction(
      deps.db,
      caller.effect,
      async (tx) => {
        const result = await change(tx);
        await deps.audit.record(tx, {
          action,
          tenantId: caller.tenantId,
          actor: actorOf(caller.subject),
          target: { type: 'prompt_template', id: result.row.id },
          details: {
            templateId: result.row.id,
            featureKey: result.row.featureKey,
            version: result.row.version,
            hash: result.row.hash,
            previousTemplateId: result.previous?.id ?? null,
            previousHash: result.previous?.hash ?? null,
          },
          retentionClass: profile.retentionClass,
          dataResidency: profile.dataResidency,
          traceparent: caller.traceparent,
          requestId: caller.requestId,
        });
        return result;
      },
      onClock(deps.clock),
    );
    deps.onChange();
    deps.logger.info(
      {
        templateId: row.id,
        featureKey: row.featureKey,
        version: row.version,
        hash: row.hash,
        previousHash: previous?.hash ?? null,
        action,
      },
      action === 'template_published' ? 'prompt template published' : 'prompt template version activated',
    );
    return row;
  }

  return {
    publish(caller, input) {
      const featureKey = validateFeatureKey(input.featureKey);
      validateTemplateBody(input.body, deps.maxChars);
      return audited(caller, 'template_published', (tx) =>
        insertTemplateVersion(tx, { tenantId: caller.tenantId, featureKey, body: input.body, publishedBy: caller.subject }),
      );
    },
    activate(caller, templateId) {
      return audited(caller, 'template_version_activated', (tx) =>
        activateTemplateVersion(tx, { tenantId: caller.tenantId, templateId }),
      );
    },
  };
}
