import type { Db, Tx } from '../../../platform/db/database.js';
import { AppError, notFound } from '../../../platform/errors/errors.js';
import { newId } from '../../../platform/ids.js';
import type { PromptTemplate as TemplateRow } from '../../../prisma/generated/client.js';
import { templateHash, templateVariables } from './template.logic.js';

/** The tenant's own active version of the feature's template, else the global one. */
export async function findActiveTemplate(db: Db, tenantId: string, featureKey: string): Promise<TemplateRow | null> {
  const rows = await db.promptTemplate.findMany({
    where: { featureKey, active: true, OR: [{ tenantId }, { tenantId: null }] },
    orderBy: { version: 'desc' },
  });
  return rows.find((r) => r.tenantId === tenantId) ?? rows.find((r) => r.tenantId === null) ?? null;
}

/**
 * Publishes a new immutable version for the tenant (version = last + 1), makes it the active one
 * and deactivates the previous, in the caller's transaction. Returns the row with its hash.
 */
export async function insertTemplateVersion(
  tx: Tx,
  input: { tenantId: string; featureKey: string; body: string; publishedBy: string },
): Promise<{ row: TemplateRow; previous: TemplateRow | null }> {
  await tx.$executeRawUnsafe('SELECT pg_advisory_xact_lock(hashtext($1))', `ai.template:${input.tenantId}:${input.featureKey}`);
  const versions = await tx.promptTemplate.findMany({
    where: { tenantId: input.tenantId, featureKey: input.featureKey },
    orderBy: { version: 'desc' },
  });
  const previous = versions.find((v) => v.active) ?? null;
  const variables = templateVariables(input.body);
  const hash = templateHash({ featureKey: input.featureKey, body: input.body, variables });
  if (previous) await tx.promptTemplate.update({ where: { id: previous.id }, data: { active: false } });
  const row = await tx.promptTemplate.create({
    data: {
      id: newId('promptTemplate'),
      tenantId: input.tenantId,
      featureKey: input.featureKey,
      version: (versions[0]?.version ?? 0) + 1,
      body: input.body,
      variables,
      hash,
      active: true,
      publishedBy: input.publishedBy,
    },
  });
  return { row, previous };
}

/** Rollback or forward to an earlier version of the tenant's own template. */
export async function activateTemplateVersion(
  tx: Tx,
  input: { tenantId: string; templateId: string },
): Promise<{ row: TemplateRow; previous: TemplateRow | null }> {
  const target = await tx.promptTemplate.findFirst({
    where: { id: input.templateId, OR: [{ tenantId: null }, { tenantId: input.tenantId }] },
  });
  if (!target) throw notFound('Prompt template');
  if (target.tenantId === null)
    throw new AppError('FORBIDDEN', 'Global templates cannot be changed by a tenant; publish a tenant version');
  await tx.$executeRawUnsafe('SELECT pg_advisory_xact_lock(hashtext($1))', `ai.template:${input.tenantId}:${target.featureKey}`);
  const previous = await tx.promptTemplate.findFirst({
    where: { tenantId: input.tenantId, featureKey: target.featureKey, active: true },
  });
  if (previous && previous.id !== target.id)
    await tx.promptTemplate.update({ where: { id: previous.id }, data: { active: false } });
  const row = await tx.promptTemplate.update({ where: { id: target.id }, data: { active: true } });
  return { row, previous };
}
