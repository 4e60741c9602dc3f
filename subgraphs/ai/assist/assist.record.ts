import { Prisma, type Db, type Tx } from '../../../platform/db/database.js';
import { GroupCommit } from '../../../platform/db/group-commit.js';
import { prepared } from '../../../platform/db/prepared.js';
import { sqlStateOf } from '../../../platform/db/unreachable.js';
import {
  effectOfWinner,
  effectsInsertSql,
  keyedTransaction,
  type EffectEntry,
} from '../../../platform/idempotency/effect-store.js';
import type { EffectClaim } from '../../../platform/idempotency/effect.logic.js';
import { gatedOutboxInsertSql, outboxInsertSql, type OutboxRow } from '../../../events/publish/outbox.js';
import type { AuditEvent } from '../audit/audit.sink.js';
import { onClock } from '../audit/audited-change.js';
import { provenanceAuditDetails, type ProvenanceRecord } from '../provenance/provenance.logic.js';
import { gatedProvenanceInsertSql, insertProvenance, provenanceInsertSql } from '../provenance/provenance.repo.js';
import type { ChainedReceipts, ReceiptDraft, ReceiptWriter } from '../provenance/receipts/receipt.repo.js';
import { openReviewTask } from '../review/review.repo.js';
import type { AssistOutput, SafetyControl } from './assist.logic.js';
import type { AssistDeps, AssistRequest, RecordedAssist } from './assist.request.js';

type RecordDeps = Pick<AssistDeps, 'db' | 'audit' | 'clock' | 'receipts'> & { records: AssistRecords };

/** The receipt of a record as assist writes it: an answer of a live or a shadow call. */
function receiptDraft(record: ProvenanceRecord): ReceiptDraft {
  return { subject: { ...record, review: null }, event: record.mode === 'shadow' ? 'shadow' : 'assist' };
}

/** What the record stage writes besides the provenance row and its audit event. */
export interface RecordPlan {
  /** The answer, built as the row is written (so its timings include the write); absent for a failure. */
  answer?: (reviewTaskId: string | null) => AssistOutput;
  /** A held output gets its review task. */
  holdForReview: boolean;
  /** Safety controls switched off by flag that the released output skipped: each raises an alert event. */
  bypassed: readonly SafetyControl[];
}

/**
 * Record: the provenance row, its audit event, and what the release decision adds (the review
 * task of a held output, the alerts of bypassed controls) commit together or not at all; an
 * answered request is recorded under its Idempotency-Key in the same write ("answered ⇒
 * recorded"). Returns the answer, or the answer of another execution that holds the key.
 */
export async function recordAssist(
  deps: RecordDeps,
  request: AssistRequest,
  record: ProvenanceRecord,
  plan: RecordPlan,
): Promise<AssistOutput | undefined> {
  // Only an answered request is an effect a retry must get back; a failed or refused one frees
  // the key at the gateway, and its retry is a new attempt with a provenance row of its own.
  const claim = plan.answer ? request.caller.effect : undefined;
  const written =
    plan.holdForReview || plan.bypassed.length > 0
      ? await recordInTransaction(deps, request, record, claim, plan)
      : await recordInOneStatement(deps, request, record, claim, plan.answer);
  return written.output;
}

function auditOf(request: AssistRequest, record: ProvenanceRecord, action: string, details: Record<string, unknown>): AuditEvent {
  const { snapshot, caller } = request;
  return {
    action,
    tenantId: record.tenantId,
    actor: { type: record.actorType, id: record.actorId },
    target: { type: 'ai_provenance', id: record.id },
    details,
    retentionClass: snapshot.tenant.retentionClass,
    dataResidency: record.residency ?? snapshot.tenant.dataResidency,
    traceparent: caller.traceparent,
    requestId: caller.requestId,
  };
}

/**
 * The common case — no review task, no bypass alert — goes to the group commit: its provenance
 * row, its audit outbox row and (with an Idempotency-Key) its effect row are written in one
 * statement with those of the answers that wait beside it, together or not at all, without an
 * interactive transaction (its round trips were most of this path's database cost; bench/README.md,
 * assist). With a key the other two rows are written only if the effect row was: when another
 * execution of the same request holds the key, nothing is written and the answer is that
 * execution's.
 */
async function recordInOneStatement(
  deps: RecordDeps,
  request: AssistRequest,
  record: ProvenanceRecord,
  claim: EffectClaim | undefined,
  answer: RecordPlan['answer'],
): Promise<RecordedAssist> {
  const auditRows = deps.audit.prepare(auditOf(request, record, 'assist', provenanceAuditDetails(record)));
  // The live answer is built again after the write, so its timings include it; the recorded one
  // (what a retry gets) carries the timings known when it was written.
  const answered = (): RecordedAssist => ({ reviewTaskId: null, output: answer?.(null) });
  if (!claim) {
    await deps.records.submit({ record, auditRows });
    return answered();
  }
  claim.consumed = true;
  const now = deps.clock.now();
  const written = await deps.records.submit({ record, auditRows, effect: { claim, value: answered(), now } });
  return written ? answered() : effectOfWinner<RecordedAssist>(deps.db, claim, now);
}

/** One answer's rows, as the group commit writes them with those of others (writeRecords). */
export interface RecordEntry {
  record: ProvenanceRecord;
  auditRows: readonly OutboxRow[];
  /** An answer under an Idempotency-Key: its effect row, which the two others depend on. */
  effect?: EffectEntry;
}

/** Answers, per entry, whether its rows were written (false: another execution holds its key). */
export type AssistRecords = GroupCommit<RecordEntry, boolean>;

/**
 * The group commit of assist's common-case records (platform/db/group-commit.ts): every answer
 * that arrives while a commit is in flight goes into the next statement; a lone answer is written
 * at once. Two answers under one key never share a statement. Each answer is released only after
 * the commit that holds its rows.
 */
export function assistRecords(db: Db, receipts: ReceiptWriter): AssistRecords {
  return new GroupCommit<RecordEntry, boolean>({
    write: (entries) => writeRecords(db, receipts, entries),
    keyOf: (entry) => entry.effect?.claim.key,
    maxBatch: RECORD_BATCH_MAX,
    maxInFlight: RECORD_COMMITS_IN_FLIGHT,
  });
}

/** Rows of at most this many answers per statement (their record sets are one parameter each). */
const RECORD_BATCH_MAX = 64;
/**
 * One commit in flight: the answers arriving meanwhile wait for it and go together in the next. Two
 * in flight made smaller batches and measured slower (bench/results/2026-11-26T0806-assist-levers.md:
 * more Postgres CPU per answer in every run). The price: a statement held up (waiting for a lock on a
 * key that a racing execution of the same request holds, at most its transaction's 10 s) holds up
 * every answer of the process behind it; the gateway's lease keeps such races to a retry after a lost
 * lease.
 */
const RECORD_COMMITS_IN_FLIGHT = 1;

/**
 * The rows of several answers and their receipts. The common case is ONE statement without an
 * interactive transaction: receipts signed against the chain heads this process last wrote, and the
 * statement that writes them with the effect, provenance and audit rows only if those heads are
 * still current, holding the heads' locks for that statement alone (a hot tenant's commits queue on
 * its head, so what the lock spans is what they cost: bench/README.md, receipts). Otherwise (a head
 * unknown or moved, or a key another execution holds, whose answer must then get no receipt), the
 * transaction: the record statement, then the receipts of the records written under the heads'
 * locks.
 */
async function writeRecords(db: Db, receipts: ReceiptWriter, entries: readonly RecordEntry[]): Promise<boolean[]> {
  if (await writeChained(db, receipts, entries)) return entries.map(() => true);
  return db.$transaction(
    async (tx) => {
      const written = await writeRecordRows(tx, entries);
      await receipts.append(
        tx,
        entries.filter((_, i) => written[i]).map((entry) => receiptDraft(entry.record)),
      );
      return written;
    },
    { maxWait: 10_000, timeout: 10_000 },
  );
}

/**
 * Every answer and its receipt in one statement; false (nothing written) when a chain head was not
 * as signed against, or when another execution holds one of the keys.
 *
 * The receipts were signed for every answer, so they may be written only if every keyed answer's
 * effect row is: a key held elsewhere would leave a gap in the chain. The effect rows are written
 * only under current heads, and a statement that wrote fewer than all of them ends in a division by
 * zero, the one way a single statement can take back what its CTEs already wrote (Postgres has no
 * RAISE outside PL/pgSQL). The transaction then records the batch key by key.
 */
async function writeChained(db: Db, receipts: ReceiptWriter, entries: readonly RecordEntry[]): Promise<boolean> {
  const chained = await receipts.chain(entries.map((entry) => receiptDraft(entry.record)));
  if (!chained) return false;
  const statement = chainedRecordStatement(chained, entries);
  let ok = false;
  try {
    const rows = await db.$queryRaw<Array<{ chained: boolean }>>(statement.sql);
    ok = rows[0]?.chained === true;
  } catch (error) {
    if (!(statement.keyed && sqlStateOf(error) === DIVISION_BY_ZERO)) {
      chained.settle(false);
      throw error;
    }
  }
  chained.settle(ok);
  return ok;
}

/**
 * writeChained's statement: the receipt CTEs, then the effect (keyed answers only), provenance and
 * audit rows under their gate; it answers whether the heads were current, and a keyed one divides by
 * zero when they were but a key was not written.
 */
function chainedRecordStatement(chained: ChainedReceipts, entries: readonly RecordEntry[]): { sql: Prisma.Sql; keyed: boolean } {
  const effects = entries.flatMap((entry) => (entry.effect ? [entry.effect] : []));
  const keyed = effects.length > 0;
  const ctes = [
    ...chained.ctes,
    ...(keyed ? [Prisma.sql`effect AS (${effectsInsertSql(effects, chained.gate)})`] : []),
    Prisma.sql`provenance AS (${provenanceInsertSql(
      entries.map((entry) => entry.record),
      chained.gate,
    )})`,
    Prisma.sql`audit AS (${outboxInsertSql(
      entries.flatMap((entry) => entry.auditRows),
      chained.gate,
    )})`,
  ];
  const everyKeyWritten = keyed
    ? Prisma.sql`, 1 / (CASE WHEN ${chained.gate} AND (SELECT count(*) FROM effect) <> ${effects.length}::int THEN 0 ELSE 1 END) AS "everyKeyWritten"`
    : Prisma.empty;
  const sql = prepared(
    `assist_record_${chained.label}${keyed ? '_keyed' : ''}`,
    Prisma.sql`WITH ${Prisma.join(ctes, ', ')} SELECT ${chained.gate} AS chained${everyKeyWritten}`,
  );
  return { sql, keyed };
}

/** SQLSTATE of writeChained's deliberate end when a key is held elsewhere (nothing was written). */
const DIVISION_BY_ZERO = '22012';

/**
 * Each keyed answer's effect row, then every answer's provenance and audit outbox rows, those of a
 * keyed answer only if its effect row was written, in ONE statement.
 */
async function writeRecordRows(db: Tx, entries: readonly RecordEntry[]): Promise<boolean[]> {
  const gate = (entry: RecordEntry) => entry.effect?.claim.key ?? null;
  const effects = entries.flatMap((entry) => (entry.effect ? [entry.effect] : []));
  const provenance = entries.map((entry) => ({ row: entry.record, gate: gate(entry) }));
  const audit = entries.flatMap((entry) => entry.auditRows.map((row) => ({ row, gate: gate(entry) })));
  const written = Prisma.sql`SELECT key FROM effect`;
  const rows = await db.$queryRaw<Array<{ key: string }>>(
    prepared(
      'assist_record_batch',
      Prisma.sql`
    WITH effect AS (${effectsInsertSql(effects)}),
      provenance AS (${gatedProvenanceInsertSql(provenance, written)}),
      audit AS (${gatedOutboxInsertSql(audit, written)})
    SELECT key FROM effect`,
    ),
  );
  const keys = new Set(rows.map((row) => row.key));
  return entries.map((entry) => !entry.effect || keys.has(entry.effect.claim.key));
}

/** A held output or a bypassed control: the extra rows make it an interactive transaction. */
function recordInTransaction(
  deps: RecordDeps,
  request: AssistRequest,
  record: ProvenanceRecord,
  claim: EffectClaim | undefined,
  plan: RecordPlan,
): Promise<RecordedAssist> {
  return keyedTransaction(
    deps.db,
    claim,
    async (tx) => {
      await insertProvenance(tx, record);
      await deps.receipts.append(tx, [receiptDraft(record)]);
      const audit = (action: string, details: Record<string, unknown>) =>
        deps.audit.record(tx, auditOf(request, record, action, details));
      await audit('assist', provenanceAuditDetails(record));
      // Rollback of phase 2: "the gateway passes content through without review; log and alert".
      // The alert is an audit event of its own, so the audit service can page on its type.
      for (const control of plan.bypassed) {
        await audit(control === 'review' ? 'hitl_passthrough' : 'moderation_passthrough', {
          provenanceId: record.id,
          featureKey: record.featureKey,
          control,
          flag: control === 'review' ? 'hitl.enabled' : 'moderation.enabled',
          outputHash: record.outputHash,
        });
      }
      const reviewTaskId = plan.holdForReview ? await openTask(request, record, tx) : null;
      return { reviewTaskId, output: plan.answer?.(reviewTaskId) };
    },
    // Under load the pool is the queue: wait for a connection rather than fail a request
    // whose model call already happened (Prisma's default maxWait is 2 s).
    { maxWait: 10_000, timeout: 10_000, skipLookup: true, ...onClock(deps.clock) },
  );
}

async function openTask(request: AssistRequest, record: ProvenanceRecord, tx: Tx): Promise<string> {
  const task = await openReviewTask(tx, {
    tenantId: record.tenantId,
    provenanceId: record.id,
    featureKey: record.featureKey,
    facilityId: record.facilityId,
    specialty: record.specialty,
    createdAt: record.createdAt,
  });
  if (!task.queueId) {
    request.caller.logger.warn(
      { provenanceId: record.id, reviewTaskId: task.taskId, facilityId: record.facilityId, specialty: record.specialty },
      'no review queue matches this facility and specialty; the task waits unrouted',
    );
  }
  return task.taskId;
}
