import { Arg, Ctx, Field, FieldResolver, ID, Int, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { requireAnyScope } from '../../../../platform/auth/verifier.js';
import { badInput } from '../../../../platform/errors/errors.js';
import { auditedChange } from '../../audit/audited-change.js';
import { platformCaller, type AiContext } from '../../context.js';
import { AI_AUDIT } from '../../scopes.js';
import { AIProvenance } from '../provenance.type.js';
import { exportChain, receiptsOf, type ReceiptView } from './receipt-export.js';

@ObjectType({
  simpleResolvers: true,
  description:
    'A signed, hash-chained receipt of a provenance record (docs/ai-gateway.md, "Receipts"): a JWS (EdDSA) over the canonical JSON of its ids, versions and hashes, its sequence number in the tenant\'s chain and the previous receipt\'s hash.',
})
export class ProvenanceReceipt {
  @Field(() => Int, { description: "Its place in the tenant's chain: 1, 2, 3…" }) seq: number;
  @Field(() => String, { description: 'assist, shadow, backfill or review (a review decision on the record).' }) event: string;
  @Field(() => String, { description: 'The signing key, in the JWKS at /v1/ai/receipts/jwks.json.' }) kid: string;
  @Field(() => String, { description: 'sha256 of the JWS: what the next receipt names as its predecessor.' }) hash: string;
  @Field(() => Date) signedAt: Date;
  @Field(() => String, { description: 'The compact JWS; its payload holds every signed claim.' }) jws: string;
}

/** Export ranges longer than this are asked for in parts (the export is built in memory). */
const MAX_EXPORT_DAYS = 31;

function toReceipt(view: ReceiptView): ProvenanceReceipt {
  return { seq: view.seq, event: view.event, kid: view.kid, hash: view.hash, signedAt: view.signedAt, jws: view.jws };
}

@Resolver(() => AIProvenance)
export class ProvenanceReceiptResolver {
  @FieldResolver(() => ProvenanceReceipt, {
    nullable: true,
    description:
      "The record's latest receipt (after a review decision, the decision's); earlier ones are in the tenant's export (scope ai.audit).",
  })
  async receipt(@Root() provenance: AIProvenance, @Ctx() ctx: AiContext): Promise<ProvenanceReceipt | null> {
    requireAnyScope(ctx.principal, AI_AUDIT);
    const receipts = await receiptsOf(ctx.db, ctx.tenantId, provenance.provenanceId);
    const latest = receipts.at(-1);
    return latest ? toReceipt(latest) : null;
  }
}

@Resolver()
export class ReceiptResolver {
  @Query(() => [String], {
    description: `The tenant's receipt chain for [from, to) as JSON Lines, one line per element: the JWKS, each receipt with its provenance row as it is now (null once erased), then a signed seal; verify with npm run provenance:verify (scope ai.audit; at most ${MAX_EXPORT_DAYS} days).`,
  })
  async provenanceReceiptExport(
    @Arg('from', () => Date) from: Date,
    @Arg('to', () => Date) to: Date,
    @Ctx() ctx: AiContext,
  ): Promise<string[]> {
    requireAnyScope(ctx.principal, AI_AUDIT);
    const days = (to.getTime() - from.getTime()) / 86_400_000;
    if (!(days > 0) || days > MAX_EXPORT_DAYS) {
      throw badInput(`to must be after from, at most ${MAX_EXPORT_DAYS} days`, { argument: 'to' });
    }
    const { services } = ctx;
    return exportChain({ db: ctx.db, keys: services.receiptKeys, clock: services.clock }, ctx.tenantId, { from, to });
  }

  @Mutation(() => ID, {
    description:
      'Makes a new receipt signing key the active one (scope platform.admin); earlier keys stay in the JWKS so their receipts still verify. Audited (audit.ai.receipt_key_rotated). Answers the new kid.',
  })
  async rotateReceiptSigningKey(@Ctx() ctx: AiContext): Promise<string> {
    const caller = platformCaller(ctx);
    const { kid } = await auditedChange({ db: ctx.db, audit: ctx.services.audit, clock: ctx.services.clock }, caller, {
      action: 'receipt_key_rotated',
      change: () => ctx.services.receiptKeys.rotate(),
      target: (rotated) => ({ type: 'receipt_signing_key', id: rotated.kid }),
      details: (rotated) => ({ kid: rotated.kid }),
    });
    return kid;
  }
}
