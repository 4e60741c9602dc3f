import type { Clock } from '../../../../platform/clock.js';
import type { Db } from '../../../../platform/db/database.js';
import type { ReceiptKeys } from './receipt-keys.js';
import { keysLine, receiptLine, sealClaims, sealLine } from './receipt-export.logic.js';
import type { ReceiptEvent } from './receipt.logic.js';
import { signCanonical } from './receipt.sign.js';

export interface ReceiptView {
  provenanceId: string;
  tenantId: string;
  seq: number;
  event: ReceiptEvent;
  kid: string;
  hash: string;
  signedAt: Date;
  /** The compact JWS: what an auditor verifies. */
  jws: string;
}

export interface ReceiptExportDeps {
  db: Db;
  keys: ReceiptKeys;
  clock: Clock;
}

/** The receipts of one provenance record in the caller's tenant, oldest first (an answer, then its review). */
export async function receiptsOf(db: Db, tenantId: string, provenanceId: string): Promise<ReceiptView[]> {
  const rows = await db.provenanceReceipt.findMany({ where: { tenantId, provenanceId }, orderBy: { seq: 'asc' } });
  return rows.map((row) => ({ ...row, event: row.event as ReceiptEvent }));
}

/**
 * The sequence numbers a time range covers: from the first receipt signed at or after `from` to
 * the last signed before `to`, and every receipt between, whatever its own time (replicas' clocks
 * differ a little; the chain's order is the sequence, so an export is never a chain with holes).
 */
async function seqRange(
  db: Db,
  tenantId: string,
  range: { from: Date; to: Date },
): Promise<{ first: number; last: number } | null> {
  const where = { tenantId, signedAt: { gte: range.from, lt: range.to } };
  const [first, last] = await Promise.all([
    db.provenanceReceipt.findFirst({ where, orderBy: { seq: 'asc' }, select: { seq: true } }),
    db.provenanceReceipt.findFirst({ where, orderBy: { seq: 'desc' }, select: { seq: true } }),
  ]);
  return first && last ? { first: first.seq, last: last.seq } : null;
}

/**
 * A tenant's chain for a time range as JSON Lines (receipt-export.logic.ts): the JWKS, each receipt
 * with its provenance row as it is now (null once erased), and a seal signed now.
 */
export async function exportChain(deps: ReceiptExportDeps, tenantId: string, range: { from: Date; to: Date }): Promise<string[]> {
  const seqs = await seqRange(deps.db, tenantId, range);
  const receipts = seqs
    ? await deps.db.provenanceReceipt.findMany({
        where: { tenantId, seq: { gte: seqs.first, lte: seqs.last } },
        orderBy: { seq: 'asc' },
      })
    : [];
  const ids = [...new Set(receipts.map((receipt) => receipt.provenanceId))];
  const rows = new Map(
    (await deps.db.aIProvenance.findMany({ where: { tenantId, id: { in: ids } } })).map((row) => [row.id, row]),
  );
  const { key } = await deps.keys.signer();
  const seal = await signCanonical(sealClaims(tenantId, range, receipts, deps.clock.now()), key);
  return [
    keysLine(await deps.keys.jwks()),
    ...receipts.map((receipt) => receiptLine(receipt, rows.get(receipt.provenanceId) ?? null)),
    sealLine(seal),
  ];
}
