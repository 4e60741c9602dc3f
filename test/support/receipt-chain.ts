import type { JWK } from 'jose';
import {
  nextLink,
  receiptClaims,
  receiptHash,
  type ChainHead,
  type ReceiptSubject,
} from '../../subgraphs/ai/provenance/receipts/receipt.logic.js';
import {
  keysLine,
  receiptLine,
  sealClaims,
  sealLine,
  type StoredReceipt,
} from '../../subgraphs/ai/provenance/receipts/receipt-export.logic.js';
import {
  newSigningKey,
  signCanonical,
  signingKeyOf,
  type SigningKey,
} from '../../subgraphs/ai/provenance/receipts/receipt.sign.js';
import { outputHash } from '../../subgraphs/ai/provenance/provenance.logic.js';

/** A provenance row as a receipt covers it; `n` varies its ids and output. */
export function subject(n: number, overrides: Partial<ReceiptSubject> = {}): ReceiptSubject {
  return {
    id: `prov-${n}`,
    tenantId: 'tenant-a',
    featureKey: 'course.summary',
    mode: 'live',
    status: 'completed',
    templateId: 'tpl-1',
    templateVersion: 3,
    templateHash: 'sha256:tpl',
    ruleId: 'rule-1',
    ruleVersion: 2,
    residency: 'eu',
    provider: 'mock',
    model: 'mock-1',
    renderedPromptHash: `sha256:prompt-${n}`,
    outputHash: outputHash(`output ${n}`),
    moderation: null,
    reviewState: null,
    review: null,
    createdAt: new Date(Date.UTC(2026, 10, 1, 0, n)),
    completedAt: new Date(Date.UTC(2026, 10, 1, 0, n, 1)),
    ...overrides,
  };
}

export async function testKey(kid = 'k-test'): Promise<SigningKey> {
  return signingKeyOf((await newSigningKey(kid)).privateJwk);
}

/** A signed chain of `count` receipts from an empty head. */
export async function signedChain(
  key: SigningKey,
  count: number,
): Promise<{ receipts: StoredReceipt[]; rows: ReceiptSubject[] }> {
  let head: ChainHead = { seq: 0, hash: null };
  const receipts: StoredReceipt[] = [];
  const rows: ReceiptSubject[] = [];
  for (let n = 1; n <= count; n++) {
    const row = subject(n);
    const claims = receiptClaims(row, 'assist', nextLink(head), { signedAt: row.completedAt!, reviewerKey: 'pseudonym-key' });
    const jws = await signCanonical(claims, key);
    receipts.push({ seq: claims.seq, jws });
    rows.push(row);
    head = { seq: claims.seq, hash: receiptHash(jws) };
  }
  return { receipts, rows };
}

/** The export lines of a chain, as the server writes them. */
export async function exportOf(
  key: SigningKey,
  receipts: readonly StoredReceipt[],
  rows: readonly (ReceiptSubject | null)[],
  jwks?: { keys: JWK[] },
): Promise<string[]> {
  const range = { from: new Date(Date.UTC(2026, 10, 1)), to: new Date(Date.UTC(2026, 10, 2)) };
  const seal = await signCanonical(sealClaims('tenant-a', range, receipts, range.to), key);
  return [
    keysLine(jwks ?? { keys: [key.publicJwk] }),
    ...receipts.map((receipt, i) => receiptLine(receipt, rows[i])),
    sealLine(seal),
  ];
}
