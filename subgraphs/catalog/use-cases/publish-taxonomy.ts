import type { Prisma } from '../../../platform/db/database.js';
import { AppError } from '../../../platform/errors.js';
import { newId } from '../../../platform/ids.js';
import { applyTaxonomyDiff, requireNamespace, type TaxonomyDiff, type TaxonomyNodeData } from '../taxonomy/taxonomy.logic.js';
import { lockOrCreateTaxonomy, saveTaxonomyVersion } from '../taxonomy/taxonomy.repo.js';
import type { Taxonomy } from '../../../prisma/generated/client.js';
import { tenantPolicy } from '../tenant.repo.js';
import type { AdminCommandContext } from './admin.js';

/**
 * publishTaxonomy: the namespace's next version from a diff of the current one (the first
 * version diffs from an empty tree). `expectedVersion`, when given, must be the current version
 * (0 before the first publish), or the answer is request.conflict (409) and nothing changes.
 */
export async function publishTaxonomy(
  ctx: AdminCommandContext,
  command: { namespace: string; expectedVersion?: number | null; diff: TaxonomyDiff },
): Promise<Taxonomy> {
  const namespace = requireNamespace(command.namespace);
  const taxonomy = await lockOrCreateTaxonomy(ctx.tx, ctx.tenantId, namespace, newId('taxonomy'));
  if (command.expectedVersion !== undefined && command.expectedVersion !== null && command.expectedVersion !== taxonomy.version) {
    throw new AppError(
      'request.conflict',
      `Taxonomy ${namespace} is at version ${taxonomy.version}, not ${command.expectedVersion}`,
      {
        details: { expectedVersion: command.expectedVersion, currentVersion: taxonomy.version },
      },
    );
  }
  const nodes = applyTaxonomyDiff(taxonomy.nodes as unknown as TaxonomyNodeData[], command.diff);
  const diff = {
    added: command.diff.added.map((node) => ({ path: node.path, label: node.label })),
    removed: [...command.diff.removed],
    moved: command.diff.moved.map((move) => ({ from: move.from, to: move.to })),
    renamed: command.diff.renamed.map((node) => ({ path: node.path, label: node.label })),
  };
  const version = taxonomy.version + 1;
  const saved = await saveTaxonomyVersion(ctx.tx, taxonomy, {
    version,
    nodes: nodes as unknown as Prisma.InputJsonValue,
    diff: diff as unknown as Prisma.InputJsonValue,
    createdBy: ctx.actor.id,
  });
  const policy = await tenantPolicy(ctx.tx, ctx.tenantId);
  await ctx.events.emit({
    eventType: 'catalog.taxonomy.updated',
    payload: { taxonomyId: saved.id, namespace, version, diff },
    tenantId: ctx.tenantId,
    partitionKey: saved.id,
    actor: ctx.actor,
    retentionClass: policy.retentionClass,
    dataResidency: policy.dataResidency,
  });
  return saved;
}
