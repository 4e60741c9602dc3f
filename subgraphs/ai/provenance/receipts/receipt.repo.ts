import type { Clock } from '../../../../platform/clock.js';
import { insertSql, type Column } from '../../../../platform/db/bulk-sql.js';
import { Prisma, type Tx } from '../../../../platform/db/database.js';
import { AppError } from '../../../../platform/errors/errors.js';
import type { ReceiptKeys, ReceiptSigner } from './receipt-keys.js';
import { nextLink, receiptClaims, receiptHash, type ChainHead, type ReceiptEvent, type ReceiptSubject } from './receipt.logic.js';
import { signCanonical } from './receipt.sign.js';

/** One provenance record to give a receipt: the row as written, and what writing it was. */
export interface ReceiptDraft {
  subject: ReceiptSubject;
  event: ReceiptEvent;
}

/**
 * Writes the receipts of provenance records, in the same commit as the records: either inside their
 * transaction after locking the tenants' chain heads (`append`), or signed beforehand against the
 * heads this writer last wrote and written by the records' own statement only if those heads are
 * still current (`chain`).
 */
export interface ReceiptWriter {
  append(tx: Tx, drafts: readonly ReceiptDraft[]): Promise<void>;
  /** Undefined when the writer knows no head of one of the drafts' tenants: then `append`. */
  chain(drafts: readonly ReceiptDraft[]): Promise<ChainedReceipts | undefined>;
}

/** Receipts signed ahead of their statement, and the parts of that statement that write them. */
export interface ChainedReceipts {
  /** Names the statement these parts make (a prepared statement's text must not vary under one name). */
  label: string;
  /** CTEs to open the statement's WITH: they lock and check the heads, then advance them and insert the receipts. */
  ctes: readonly Prisma.Sql[];
  /** A boolean expression, true when the heads were as signed against: the records' rows are written only then. */
  gate: Prisma.Sql;
  /** Tells the writer what the statement found, once it has committed. */
  settle(chained: boolean): void;
}

/** Tenants whose head one writer remembers; past this, the oldest is forgotten (it is only a guess). */
const KNOWN_HEADS_MAX = 10_000;

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
 * Receipts are chained one at a time per tenant: every replica and every concurrent answer appends
 * to a tenant's chain under the lock of its head row, so the chain is one line (no two receipts
 * share a sequence number or a predecessor). A failure to sign throws, and the records roll back
 * with it: no answer without its receipt.
 *
 * A hot tenant's answers mostly come one group commit after another from the same process, so the
 * writer remembers the head it last wrote per tenant and `chain` signs against it before any
 * database work: the record statement then locks the heads, checks them and writes everything in
 * one round trip, the lock held for that statement only (bench/README.md, receipts). A head that
 * moved meanwhile (another replica, a review decision) writes nothing, and the caller falls back to
 * `append`. The remembered heads are never trusted: the statement checks each one.
 */
export function receiptWriter(keys: ReceiptKeys, clock: Clock): ReceiptWriter {
  const known = new Map<string, ChainHead>();
  const remember = (heads: ReadonlyMap<string, ChainHead>) => {
    for (const [tenantId, head] of heads) {
      known.delete(tenantId);
      known.set(tenantId, head);
      if (known.size > KNOWN_HEADS_MAX) known.delete(known.keys().next().value!);
    }
  };
  return {
    async append(tx, drafts) {
      if (drafts.length === 0) return;
      const signer = await keys.signer();
      const heads = await lockHeads(tx, [...new Set(drafts.map((draft) => draft.subject.tenantId))]);
      const receipts = await signChain(signer, heads, drafts, clock.now());
      await writeReceipts(tx, receipts, heads);
      // Remembered before the commit: if it fails, the next `chain` finds the head elsewhere and writes nothing.
      remember(heads);
    },
    async chain(drafts) {
      const tenantIds = [...new Set(drafts.map((draft) => draft.subject.tenantId))];
      if (drafts.length === 0 || !tenantIds.every((id) => known.has(id))) return undefined;
      const expected = new Map(tenantIds.map((id) => [id, known.get(id)!]));
      const heads = new Map(expected);
      const receipts = await signChain(await keys.signer(), heads, drafts, clock.now());
      return {
        label: 'chained',
        ctes: chainedReceiptCtes(expected, heads, receipts),
        gate: Prisma.sql`(SELECT ok FROM receipt_chained)`,
        settle(chained) {
          if (chained) remember(heads);
          else for (const id of tenantIds) known.delete(id);
        },
      };
    },
  };
}

/** For a service that records no receipts (bench/receipts.ts measures the cost of them against it). */
export const noReceipts: ReceiptWriter = {
  append: async () => {},
  chain: async () => ({ label: 'unchained', ctes: [], gate: Prisma.sql`true`, settle() {} }),
};

/** Signs the drafts' receipts in order, each linked to the one before in its tenant's chain; advances `heads`. */
async function signChain(
  signer: ReceiptSigner,
  heads: Map<string, ChainHead>,
  drafts: readonly ReceiptDraft[],
  signedAt: Date,
): Promise<NewReceipt[]> {
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
  return receipts;
}

const RECEIPT_COLUMNS: readonly Column<NewReceipt>[] = [
  { name: 'tenantId', type: 'text', value: (r) => r.tenantId },
  { name: 'seq', type: 'int', value: (r) => r.seq },
  { name: 'provenanceId', type: 'text', value: (r) => r.provenanceId },
  { name: 'event', type: 'text', value: (r) => r.event },
  { name: 'jws', type: 'text', value: (r) => r.jws },
  { name: 'hash', type: 'text', value: (r) => r.hash },
  { name: 'kid', type: 'text', value: (r) => r.kid },
  { name: 'signedAt', type: 'timestamp', value: (r) => r.signedAt },
];

/**
 * The receipt CTEs of a chained statement. `receipt_lock` takes the heads' row locks (in tenant
 * order, as `lockHeads` does, so the two queue rather than deadlock) and reads them as committed
 * after any wait; `receipt_chained` is true only if every head is the one signed against; only then
 * are the heads advanced and the receipts inserted. Every value is one jsonb parameter, so the text
 * is the same for any batch (a prepared statement).
 */
function chainedReceiptCtes(
  expected: ReadonlyMap<string, ChainHead>,
  heads: ReadonlyMap<string, ChainHead>,
  receipts: readonly NewReceipt[],
): Prisma.Sql[] {
  const moves = [...expected].map(([tenantId, from]) => ({
    tenantId,
    fromSeq: from.seq,
    fromHash: from.hash,
    seq: heads.get(tenantId)!.seq,
    hash: heads.get(tenantId)!.hash,
  }));
  const gate = Prisma.sql`(SELECT ok FROM receipt_chained)`;
  return [
    Prisma.sql`receipt_move AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(moves)}::jsonb)
        AS m("tenantId" text, "fromSeq" int, "fromHash" text, "seq" int, "hash" text))`,
    Prisma.sql`receipt_lock AS (
      SELECT h."tenantId", h."seq", h."hash" FROM "ReceiptChainHead" AS h
      WHERE h."tenantId" IN (SELECT "tenantId" FROM receipt_move)
      ORDER BY h."tenantId" COLLATE "C" FOR UPDATE)`,
    Prisma.sql`receipt_chained AS (
      SELECT (SELECT count(*) FROM receipt_lock AS l JOIN receipt_move AS m ON l."tenantId" = m."tenantId"
          AND l."seq" = m."fromSeq" AND l."hash" IS NOT DISTINCT FROM m."fromHash")
        = (SELECT count(*) FROM receipt_move) AS ok)`,
    Prisma.sql`receipt_head AS (
      UPDATE "ReceiptChainHead" AS h SET "seq" = m."seq", "hash" = m."hash" FROM receipt_move AS m
      WHERE h."tenantId" = m."tenantId" AND ${gate})`,
    Prisma.sql`receipt_rows AS (${insertSql('ProvenanceReceipt', RECEIPT_COLUMNS, receipts, { onlyIf: gate })})`,
  ];
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
  const headRows = [...heads].map(([tenantId, head]) => Prisma.sql`(${tenantId}, ${head.seq}::int, ${head.hash})`);
  await tx.$executeRaw`
    WITH receipts AS (${insertSql('ProvenanceReceipt', RECEIPT_COLUMNS, receipts)})
    UPDATE "ReceiptChainHead" AS h SET "seq" = v.seq, "hash" = v.hash
    FROM (VALUES ${Prisma.join(headRows)}) AS v("tenantId", seq, hash)
    WHERE h."tenantId" = v."tenantId"`;
}
