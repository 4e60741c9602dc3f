import type { JWK } from 'jose';
import { ROW_BOUND_CLAIMS, receiptHash, type ReceiptClaims, type ReceiptSubject } from './receipt.logic.js';

/**
 * The JSON Lines export of a tenant's chain for a time range: the key set line, one line per
 * receipt with its provenance row as it is now, then a signed seal naming the count and the last
 * receipt, so an export cut at either end fails verification (verify-receipts.ts).
 */
export interface StoredReceipt {
  seq: number;
  jws: string;
}

export interface SealClaims {
  type: 'receipt-export-seal';
  tenantId: string;
  from: string;
  to: string;
  count: number;
  firstSeq: number | null;
  lastSeq: number | null;
  lastHash: string | null;
  exportedAt: string;
}

export function sealClaims(
  tenantId: string,
  range: { from: Date; to: Date },
  receipts: readonly StoredReceipt[],
  exportedAt: Date,
): SealClaims {
  const last = receipts.at(-1);
  return {
    type: 'receipt-export-seal',
    tenantId,
    from: range.from.toISOString(),
    to: range.to.toISOString(),
    count: receipts.length,
    firstSeq: receipts[0]?.seq ?? null,
    lastSeq: last?.seq ?? null,
    lastHash: last ? receiptHash(last.jws) : null,
    exportedAt: exportedAt.toISOString(),
  };
}

type RowClaims = Partial<Pick<ReceiptClaims, (typeof ROW_BOUND_CLAIMS)[number]>>;

/** A provenance row under the names of the claims it must match (the row-bound ones only). */
export function rowClaims(row: ReceiptSubject): RowClaims {
  const claims: Record<(typeof ROW_BOUND_CLAIMS)[number], unknown> = {
    provenanceId: row.id,
    tenantId: row.tenantId,
    featureKey: row.featureKey,
    mode: row.mode,
    templateId: row.templateId,
    templateVersion: row.templateVersion,
    templateHash: row.templateHash,
    ruleId: row.ruleId,
    ruleVersion: row.ruleVersion,
    residency: row.residency,
    provider: row.provider,
    model: row.model,
    inputHash: row.renderedPromptHash,
    outputHash: row.outputHash,
    createdAt: row.createdAt.toISOString(),
  };
  return claims as RowClaims;
}

export function keysLine(jwks: { keys: JWK[] }): string {
  return JSON.stringify({ type: 'keys', jwks });
}

/** A receipt's line; `row` is null once the provenance row is erased (the receipt still verifies). */
export function receiptLine(receipt: StoredReceipt, row: ReceiptSubject | null): string {
  return JSON.stringify({ type: 'receipt', seq: receipt.seq, receipt: receipt.jws, row: row ? rowClaims(row) : null });
}

export function sealLine(seal: string): string {
  return JSON.stringify({ type: 'seal', seal });
}
