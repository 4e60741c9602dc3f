import type { Clock } from '../../../../platform/clock.js';
import { Prisma, type Tx } from '../../../../platform/db/database.js';
import { AppError } from '../../../../platform/errors/errors.js';
import type { ReceiptKeys } from './receipt-keys.js';
import { nextLink, receiptClaims, receiptHash, type ChainHead, type ReceiptEvent, type ReceiptSubject } from './receipt.logic.js';
import { signCanonical } from './receipt.sign.js';

/** One provenance record to give a receipt: the row as written, and what writing it was. */
export interface ReceiptDraft {
  subject: ReceiptSubject;
  event: ReceiptEvent;
}

/** Appends receipts inside the transaction that writes their provenance records. */
export interface ReceiptWriter {
  append(tx: Tx, drafts: readonly ReceiptDraft[]): Promise<void>;
}

interface NewReceipt {
  tenantId: string;
  seq: number;
  provenanceId: string;
  event: ReceiptEvent;
  jws: string;
  hash: string;
  kid: string;
  signedAt: Date;
}

/**
 * Receipts are signed in the transaction of their records, after the chain heads of their tenants
 * are locked: every replica and every concurrent answer appends to a tenant's chain one at a time,
 * so the chain is one line (no two receipts share a sequence number or a predecessor). A failure to
 * sign throws, and the records roll back with it: no answer without its receipt.
 */
export function receiptWriter(keys: ReceiptKeys, clock: Clock): ReceiptWriter {
  return {
    async append(tx, drafts) {
      if (drafts.length === 0) return;
      const signer = await keys.signer();
      const heads = await lockHeads(tx, [...new Set(drafts.map((draft) => draft.subject.tenantId))]);
      const signedAt = clock.now();
      const receipts: NewReceipt[] = [];
      for (const { subject, event } of drafts) {
        const head = heads.get(subject.tenantId)!;
        const claims = receiptClaims(subject, event, nextLink(head), { signedAt, reviewerKey: signer.pseudonymKey });
        const jws = await signCanonical(claims, signer.key).catch((error: unknown) => {
          throw new AppError('receipt.signing_unavailable', 'signing a receipt failed', { cause: error });
        });
        const hash = receiptHash(jws);
        receipts.push({
          tenantId: subject.tenantId,
          seq: claims.seq,
          provenanceId: subject.id,
          event,
          jws,
          hash,
          kid: signer.key.kid,
          signedAt,
        });
        heads.set(subject.tenantId, { seq: claims.seq, hash });
      }
      await writeReceipts(tx, receipts, heads);
    },
  };
}

/**
 * Locks the tenants' chain heads, creating those a tenant lacks, in one statement: the no-op
 * update of an existing head takes its row lock and returns it. Heads are locked in tenant order,
 * so two transactions locking the same tenants queue rather than deadlock.
 */
async function lockHeads(tx: Tx, tenantIds: readonly string[]): Promise<Map<string, ChainHead>> {
  const values = Prisma.join([...tenantIds].sort().map((id) => Prisma.sql`(${id}, 0, NULL)`));
  const rows = await tx.$queryRaw<Array<{ tenantId: string; seq: number; hash: string | null }>>`
    INSERT INTO "ReceiptChainHead" ("tenantId", "seq", "hash") VALUES ${values}
    ON CONFLICT ("tenantId") DO UPDATE SET "seq" = "ReceiptChainHead"."seq"
    RETURNING "tenantId", "seq", "hash"`;
  return new Map(rows.map((row) => [row.tenantId, { seq: row.seq, hash: row.hash }]));
}

async function writeReceipts(tx: Tx, receipts: readonly NewReceipt[], heads: ReadonlyMap<string, ChainHead>): Promise<void> {
  const rows = receipts.map(
    (r) => Prisma.sql`(${r.tenantId}, ${r.seq}, ${r.provenanceId}, ${r.event}, ${r.jws}, ${r.hash}, ${r.kid}, ${r.signedAt})`,
  );
  const headRows = [...heads].map(([tenantId, head]) => Prisma.sql`(${tenantId}, ${head.seq}::int, ${head.hash})`);
  await tx.$executeRaw`
    WITH receipts AS (
      INSERT INTO "ProvenanceReceipt" ("tenantId", "seq", "provenanceId", "event", "jws", "hash", "kid", "signedAt")
      VALUES ${Prisma.join(rows)}
    )
    UPDATE "ReceiptChainHead" AS h SET "seq" = v.seq, "hash" = v.hash
    FROM (VALUES ${Prisma.join(headRows)}) AS v("tenantId", seq, hash)
    WHERE h."tenantId" = v."tenantId"`;
}
