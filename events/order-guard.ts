import type { Db } from '../platform/db/database.js';
import type { EventBus } from './bus/event-bus.js';
import { settledAmong } from './inbox.js';
import { deadLetterMark, heldCandidates, type OrderedCandidate } from './order-hold.logic.js';

/** What the guard knows of one message of the consumer's subject above its ack floor. */
interface Known {
  /** Undefined: rejected on sight (never applied, so never waited for). */
  key: string | undefined;
  eventId: string | undefined;
  settled: boolean;
}

export interface OrderGuard {
  /** A message this process received: saves reading it from the stream later. */
  seen(seq: number, key: string, eventId: string): void;
  /** This process applied it, or dead-lettered it (after the commit or the dead letter). */
  settled(seq: number): void;
  /**
   * Of `candidates` (in sequence order, about to be applied in one serial run), those that must
   * wait, with the sequence of the earlier message each waits for (order-hold.logic.ts).
   */
  check(candidates: readonly OrderedCandidate[]): Promise<Map<number, number>>;
}

export interface OrderGuardOptions {
  bus: EventBus;
  db: Db;
  stream: string;
  durable: string;
  filterSubject: string;
  /** The key and event id of a stored message, as the consumer would read it; undefined when it rejects it. */
  keyOf(data: Uint8Array): { key: string; eventId: string } | undefined;
}

/** Messages remembered above the ack floor; past it (a floor stuck for very long) the guard starts over from the stream. */
const MAX_KNOWN = 100_000;

/**
 * The I/O half of the producer-order rule: the consumer's ack floor (one consumer-info call per
 * check), the stream's messages between the floor and the candidates (read once each, and only
 * those this process has not seen: none in steady state), and, for earlier messages of the
 * candidates' keys that another process had, whether the inbox says they were handled or
 * dead-lettered (one statement).
 *
 * The inbox is read outside the handler's transaction, and that is enough: an inbox row exists
 * only once its event's effects committed, so a candidate let through after seeing it takes the
 * course row lock after that commit and is sequenced after it. The guard can only hold a message
 * longer than needed (a commit it has not seen yet), never let one overtake.
 */
export function createOrderGuard(options: OrderGuardOptions): OrderGuard {
  const known = new Map<number, Known>();
  /** Every message of the subject up to here is in `known` (or below the floor). */
  let scannedThrough = 0;

  function advanceScan(): void {
    while (known.has(scannedThrough + 1)) scannedThrough += 1;
  }

  async function readGap(floor: number, top: number): Promise<void> {
    if (known.size > MAX_KNOWN) {
      known.clear();
      scannedThrough = floor;
    }
    scannedThrough = Math.max(scannedThrough, floor);
    advanceScan();
    if (scannedThrough >= top) return;
    const stored = await options.bus.readStream(options.stream, {
      filterSubject: options.filterSubject,
      fromSeq: scannedThrough + 1,
      toSeq: top,
    });
    for (const message of stored) {
      if (known.has(message.seq)) continue;
      const read = options.keyOf(message.data);
      known.set(message.seq, { key: read?.key, eventId: read?.eventId, settled: false });
    }
    scannedThrough = top;
  }

  /** Marks settled the earlier messages of the candidates' keys that the inbox shows handled or dead-lettered. */
  async function settleFromInbox(candidates: readonly OrderedCandidate[], floor: number, top: number): Promise<void> {
    const keys = new Set(candidates.map((c) => c.key));
    const candidateSeqs = new Set(candidates.map((c) => c.seq));
    const open: Array<[number, Known & { eventId: string }]> = [];
    for (const [seq, entry] of known) {
      if (
        seq > floor &&
        seq <= top &&
        !entry.settled &&
        entry.key !== undefined &&
        keys.has(entry.key) &&
        !candidateSeqs.has(seq)
      )
        open.push([seq, entry as Known & { eventId: string }]);
    }
    if (!open.length) return;
    const { handled, deadLettered } = await settledAmong(
      options.db,
      options.durable,
      open.map(([, entry]) => entry.eventId),
      open.map(([seq, entry]) => deadLetterMark(seq, entry.eventId)),
    );
    for (const [seq, entry] of open) {
      if (handled.has(entry.eventId) || deadLettered.has(deadLetterMark(seq, entry.eventId))) entry.settled = true;
    }
  }

  return {
    seen(seq, key, eventId) {
      if (!known.has(seq)) known.set(seq, { key, eventId, settled: false });
    },
    settled(seq) {
      const entry = known.get(seq);
      if (entry) entry.settled = true;
    },
    async check(candidates) {
      if (!candidates.length) return new Map();
      const floor = await options.bus.consumerAckFloor(options.stream, options.durable);
      for (const seq of known.keys()) if (seq <= floor) known.delete(seq);
      const top = Math.max(...candidates.map((c) => c.seq)) - 1;
      if (top <= floor) return new Map();
      await readGap(floor, top);
      await settleFromInbox(candidates, floor, top);
      const gap = [];
      for (const [seq, entry] of known) if (seq > floor && seq <= top) gap.push({ seq, key: entry.key, settled: entry.settled });
      return heldCandidates(candidates, gap);
    },
  };
}
