import type { Prisma } from '../../../platform/db/database.js';
import { AppError } from '../../../platform/errors/errors.js';
import { newId } from '../../../platform/ids.js';
import { requireIfMatch } from '../../../platform/http/conditional.logic.js';
import {
  applyTaxonomyDiff,
  requireNamespace,
  taxonomyEtag,
  type TaxonomyDiff,
  type TaxonomyNodeData,
} from '../taxonomy/taxonomy.logic.js';
import { lockOrCreateTaxonomy, saveTaxonomyVersion } from '../taxonomy/taxonomy.repo.js';
import type { Taxonomy } from '../../../prisma/generated/client.js';
import { tenantPolicy } from '../tenant.repo.js';
import type { AdminCommandContext } from './admin.js';

/**
 * publishTaxonomy: the namespace's next version from a diff of the current one (the first
 * version diffs from an empty tree). Changing a published taxonomy is a versioned write: the
 * request's If-Match must hold its etag (428 without, 412 when stale). The first version creates
 * the taxonomy: there is nothing to match, so it needs no If-Match, and one given fails (412, as
 * RFC 9110 §13.1.1 has it for a resource with no current representation). `expectedVersion`,
 * when given, must be the current version (0 before the first publish), or the answer is
 * request.conflict (409) and nothing changes; it is checked first, so a caller that meant to
 * create the first version learns that another one did (the demo catalog's seeding relies on it).
 */
export async function publishTaxonomy(
  ctx: AdminCommandContext,
  command: { namespace: string; expectedVersion?: number | null; ifMatch: string | undefined; diff: TaxonomyDiff },
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
  if (taxonomy.version > 0) requireIfMatch(command.ifMatch, taxonomyEtag(taxonomy.version), 'taxonomy');
  else if (command.ifMatch?.trim()) {
    throw new AppError(
      'request.precondition_failed',
      `Taxonomy ${namespace} has no version yet: publish the first without If-Match`,
      {
        status: 412,
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
