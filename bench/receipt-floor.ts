// The least any receipt can cost, for bench/receipts-http.ts and bench/assist-ab.ts: issue 36 asks for
// a JWS (EdDSA) over the RFC 8785 canonical JSON of every record's claims, so each answer must at
// least build its claims, serialise them canonically and sign them. This writer does exactly that
// and nothing else: no chain lock, no row, no database work at all. A system running it against the
// same system without receipts shows what the signature alone costs in the same run, the floor under
// the "within 5 %" of item 7. Never used by the product.
import { nextLink, receiptClaims, receiptHash, type ChainHead } from '../subgraphs/ai/provenance/receipts/receipt.logic.js';
import { noReceipts, type ReceiptWriter } from '../subgraphs/ai/provenance/receipts/receipt.repo.js';
import { newSigningKey, signCanonical, signingKeyOf } from '../subgraphs/ai/provenance/receipts/receipt.sign.js';

/** Signs every draft's claims, chained in memory per tenant, with a key of its own; writes nothing. */
export async function signOnlyReceipts(): Promise<ReceiptWriter> {
  const key = await signingKeyOf((await newSigningKey('floor')).privateJwk);
  const reviewerKey = 'floor-pseudonyms';
  const heads = new Map<string, ChainHead>();
  return {
    append: noReceipts.append,
    async chain(drafts) {
      const signedAt = new Date();
      for (const { subject, event } of drafts) {
        const head = heads.get(subject.tenantId) ?? { seq: 0, hash: null };
        const claims = receiptClaims(subject, event, nextLink(head), { signedAt, reviewerKey });
        heads.set(subject.tenantId, { seq: claims.seq, hash: receiptHash(await signCanonical(claims, key)) });
      }
      // Written as without receipts: the record statement alone.
      return noReceipts.chain(drafts);
    },
  };
}
