import type { PromptTemplate as TemplateRow } from '../../../prisma/generated/client.js';
import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import { badInput } from '../../../platform/errors/errors.js';
import { isId } from '../../../platform/ids.js';
import { adminCaller, type AiContext } from '../context.js';
import { AI_ADMIN } from '../scopes.js';
import { PromptTemplate, PublishPromptTemplateInput } from './prompt-template.type.js';

export function toPromptTemplate(row: TemplateRow): PromptTemplate {
  return {
    templateId: row.id,
    tenantId: row.tenantId,
    featureKey: row.featureKey,
    version: row.version,
    body: row.body,
    variables: row.variables,
    hash: row.hash,
    active: row.active,
    publishedBy: row.publishedBy,
    createdAt: row.createdAt,
  };
}

function requireTemplateId(value: string): string {
  if (!isId('promptTemplate', value)) throw badInput('templateId is not a prompt template id', { argument: 'templateId' });
  return value;
}

async function findTemplate(ctx: AiContext, id: string) {
  return ctx.db.promptTemplate.findFirst({ where: { id, OR: [{ tenantId: null }, { tenantId: ctx.tenantId }] } });
}

@Resolver(() => PromptTemplate)
export class PromptTemplateResolver {
  @Query(() => [PromptTemplate], { description: 'Template versions visible to the tenant, newest first (scope ai.admin).' })
  async promptTemplates(
    @Arg('featureKey', () => String, { nullable: true }) featureKey: string | null,
    @Ctx() ctx: AiContext,
  ): Promise<PromptTemplate[]> {
    requireAnyScope(ctx.principal, AI_ADMIN);
    const rows = await ctx.db.promptTemplate.findMany({
      where: { OR: [{ tenantId: null }, { tenantId: ctx.tenantId }], ...(featureKey ? { featureKey } : {}) },
      orderBy: [{ featureKey: 'asc' }, { version: 'desc' }],
      take: 500,
    });
    return rows.map(toPromptTemplate);
  }

  @Query(() => PromptTemplate, {
    nullable: true,
    description:
      'One template version visible to the tenant (scope ai.admin). Consumers need none: assist renders the template and answers its id, version and hash.',
  })
  async promptTemplate(@Arg('templateId', () => ID) templateId: string, @Ctx() ctx: AiContext): Promise<PromptTemplate | null> {
    requireAnyScope(ctx.principal, AI_ADMIN);
    const row = await findTemplate(ctx, requireTemplateId(templateId));
    return row ? toPromptTemplate(row) : null;
  }

  @Mutation(() => PromptTemplate, {
    description: 'Publishes a tenant template version; its sha256 hash is computed, logged and audited (scope ai.admin).',
  })
  async publishPromptTemplate(
    @Arg('input', () => PublishPromptTemplateInput) input: PublishPromptTemplateInput,
    @Ctx() ctx: AiContext,
  ): Promise<PromptTemplate> {
    return toPromptTemplate(await ctx.services.templateAdmin.publish(adminCaller(ctx), input));
  }

  @Mutation(() => PromptTemplate, {
    description: "Re-activates one of the tenant's template versions: rollback or roll forward (scope ai.admin).",
  })
  async activatePromptTemplateVersion(
    @Arg('templateId', () => ID) templateId: string,
    @Ctx() ctx: AiContext,
  ): Promise<PromptTemplate> {
    const caller = adminCaller(ctx);
    return toPromptTemplate(await ctx.services.templateAdmin.activate(caller, requireTemplateId(templateId)));
  }
}

export async function resolvePromptTemplateReference(
  ref: { templateId: string },
  ctx: AiContext,
): Promise<PromptTemplate | null> {
  requireAnyScope(ctx.principal, AI_ADMIN);
  const row = await findTemplate(ctx, requireTemplateId(ref.templateId));
  return row ? toPromptTemplate(row) : null;
}
