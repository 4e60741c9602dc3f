import type { Db } from '../../platform/db/database.js';
import type { Clock } from '../../platform/clock.js';
import type { Logger } from '../../platform/logger.js';
import type { StreamStore } from '../bus/event-bus.js';
import { readSettledThrough, raiseSettledThrough, resetSettledThrough } from './consumer-watermark.js';
import { eventKey } from '../consume/consumer-stages.logic.js';
import { ANY_TENANT, settledAmong } from '../consume/inbox.js';
import { deadLetterMark, heldCandidates, raisedFloor, type OrderedCandidate } from './order-hold.logic.js';

/** What the guard knows of one message of the consumer's subject above its floor. */
interface Known {
  /** Undefined: rejected on sight (never applied, so never waited for). */
  key: string | undefined;
  eventId: string | undefined;
  /** The event's tenant: an event id names an event only within its tenant (events/consume/inbox.ts). */
  tenantId: string;
  settled: boolean;
  /** Received by this process (rather than read from the stream). */
  inHand: boolean;
  /** When the guard first knew of it (ms): one elsewhere unsettled past the hold limit stops holding the floor. */
  since: number;
}

export interface OrderGuard {
  /** A message this process received: saves reading it from the stream later. */
  seen(seq: number, key: string, eventId: string, tenantId?: string): void;
  /** This process applied it, or dead-lettered it (after the commit or the dead letter). */
  settled(seq: number): void;
  /**
   * Of `candidates` (in sequence order, about to be applied in one serial run), those that must
   * wait, with the sequence of the earlier message each waits for (order-hold.logic.ts).
   */
  check(candidates: readonly OrderedCandidate[]): Promise<Map<number, number>>;
}

export interface OrderGuardOptions {
  bus: Pick<StreamStore, 'streamState' | 'consumerAckFloor' | 'readStream'>;
  db: Db;
  stream: string;
  durable: string;
  filterSubject: string;
  clock: Clock;
  logger: Logger;
  /** How long a message may stay unsettled before it no longer holds anything back (order-hold.logic.ts, holdLimitMs). */
  holdLimitMs: number;
  /** The key, event id and tenant of a stored message, as the consumer would read it; undefined when it rejects it. */
  keyOf(data: Uint8Array): { key: string; eventId: string; tenantId?: string } | undefined;
}

/** Messages remembered above the floor; past it (a floor stuck for very long) the guard starts over from the stream. */
const MAX_KNOWN = 100_000;
/** The floor is written back at most this often: a stored floor that lags is only slower, never wrong. */
const FLOOR_WRITE_INTERVAL_MS = 1_000;

/**
 * The I/O half of the producer-order rule. Its floor is the consumer's own: every message of the
 * subject at or below it is settled by the inbox (applied) or a dead-letter mark, as this process
 * or the database showed. Above the floor the guard reads the stream's messages once each (none in
 * steady state for those this process received) and asks the inbox, in one statement, about those
 * another process had; then it raises the floor past what is settled and writes it back for the
 * other replicas and the next start (events/ordering/consumer-watermark.ts).
 *
 * Why not JetStream's ack floor: after a server restart the server's consumer state can be older
 * than the workers' (a SIGKILL loses its last writes), and an ack from a worker for a message it
 * still held then moves the ack floor past messages another worker has in hand (nats-server 2.9's
 * processAckMsg trusts the ack's delivery sequence when the message is not pending). A guard that
 * believed it let later messages of a course overtake (one CI run of the reliability suite: 1
 * course of 50; test/integration/events/order-guard.test.ts plays that broker). The ack floor is
 * used once, to start a consumer that has no floor yet.
 *
 * The inbox is read outside the handler's transaction, and that is enough: an inbox row exists
 * only once its event's effects committed, so a candidate let through after seeing it takes the
 * course row lock after that commit and is sequenced after it. The guard can only hold a message
 * longer than needed (a commit it has not seen yet), never let one overtake.
 */
export function createOrderGuard(options: OrderGuardOptions): OrderGuard {
  const known = new Map<number, Known>();
  let floor: number | undefined;
  let floorWrittenAt = Number.NEGATIVE_INFINITY;
  let floorWritten = 0;
  /** Every message of the subject up to here is in `known` (or at or below the floor). */
  let scannedThrough = 0;
  const now = () => options.clock.now().getTime();

  /** The stored floor; the ack floor for a consumer without one, or whose stream was recreated. */
  async function loadFloor(): Promise<number> {
    const stored = await readSettledThrough(options.db, options.durable);
    const { lastSeq } = await options.bus.streamState(options.stream);
    if (stored !== undefined && stored <= lastSeq) {
      floorWritten = stored;
      return stored;
    }
    const ackFloor = await options.bus.consumerAckFloor(options.stream, options.durable);
    if (stored !== undefined) {
      options.logger.warn(
        { stored, lastSeq, ackFloor },
        'the stream is behind the stored order floor (recreated?); starting again from the ack floor',
      );
      await resetSettledThrough(options.db, options.durable, ackFloor, options.clock.now());
    } else await raiseSettledThrough(options.db, options.durable, ackFloor, options.clock.now());
    floorWritten = ackFloor;
    return ackFloor;
  }

  function advanceScan(): void {
    while (known.has(scannedThrough + 1)) scannedThrough += 1;
  }

  async function readGap(from: number, top: number): Promise<void> {
    if (known.size > MAX_KNOWN) {
      known.clear();
      scannedThrough = from;
    }
    scannedThrough = Math.max(scannedThrough, from);
    advanceScan();
    if (scannedThrough >= top) return;
    const stored = await options.bus.readStream(options.stream, {
      filterSubject: options.filterSubject,
      fromSeq: scannedThrough + 1,
      toSeq: top,
    });
    const at = now();
    for (const message of stored) {
      if (known.has(message.seq)) continue;
      const read = options.keyOf(message.data);
      // One rejected on sight is never applied, so nothing waits for it.
      known.set(message.seq, {
        key: read?.key,
        eventId: read?.eventId,
        tenantId: read?.tenantId ?? ANY_TENANT,
        settled: read === undefined,
        inHand: false,
        since: at,
      });
    }
    scannedThrough = top;
  }

  /** Marks settled the messages between the floor and `top` that the inbox shows handled or dead-lettered. */
  async function settleFromInbox(candidates: readonly OrderedCandidate[], from: number, top: number): Promise<void> {
    const candidateSeqs = new Set(candidates.map((c) => c.seq));
    const open: Array<[number, Known & { eventId: string }]> = [];
    for (const [seq, entry] of known) {
      if (seq > from && seq <= top && !entry.settled && entry.eventId !== undefined && !candidateSeqs.has(seq))
        open.push([seq, entry as Known & { eventId: string }]);
    }
    if (!open.length) return;
    const { handled, deadLettered } = await settledAmong(
      options.db,
      options.durable,
      open.map(([, entry]) => entry),
      open.map(([seq, entry]) => deadLetterMark(seq, entry.eventId)),
    );
    for (const [seq, entry] of open) {
      if (handled.has(eventKey(entry)) || deadLettered.has(deadLetterMark(seq, entry.eventId))) entry.settled = true;
    }
  }

  /** Raises the floor past what is settled, forgets what lies below it, and writes it back now and then. */
  async function raiseFloor(current: number): Promise<void> {
    const entries = [...known]
      .map(([seq, { settled, inHand, since }]) => ({ seq, settled, inHand, since }))
      .sort((a, b) => a.seq - b.seq);
    const raised = raisedFloor(current, entries, scannedThrough, now(), options.holdLimitMs);
    for (const seq of raised.passedUnsettled)
      options.logger.warn(
        { seq, eventId: known.get(seq)?.eventId },
        'a message stayed unsettled past the hold limit; the order floor passes it',
      );
    if (raised.floor <= (floor ?? 0)) return;
    floor = raised.floor;
    for (const seq of known.keys()) if (seq <= floor) known.delete(seq);
    if (floor > floorWritten && now() - floorWrittenAt >= FLOOR_WRITE_INTERVAL_MS) {
      floorWrittenAt = now();
      floorWritten = floor;
      await raiseSettledThrough(options.db, options.durable, floor, options.clock.now());
    }
  }

  return {
    seen(seq, key, eventId, tenantId = ANY_TENANT) {
      const entry = known.get(seq);
      if (entry) entry.inHand = true;
      else known.set(seq, { key, eventId, tenantId, settled: false, inHand: true, since: now() });
    },
    settled(seq) {
      const entry = known.get(seq);
      if (entry) entry.settled = true;
    },
    async check(candidates) {
      if (!candidates.length) return new Map();
      floor ??= await loadFloor();
      const from = floor;
      const top = Math.max(...candidates.map((c) => c.seq)) - 1;
      if (top <= from) return new Map();
      await readGap(from, top);
      await settleFromInbox(candidates, from, top);
      const gap = [];
      for (const [seq, entry] of known) if (seq > from && seq <= top) gap.push({ seq, key: entry.key, settled: entry.settled });
      const held = heldCandidates(candidates, gap);
      await raiseFloor(from);
      return held;
    },
  };
}
