/**
 * Producer order per partition key across crashes and replicas (issue #15, item 5). Pure: the
 * order guard (order-guard.ts) gathers the facts, this decides (the guard's state moves in
 * order-state.logic.ts).
 *
 * A message at stream sequence S with key K may be applied only when every earlier message of K
 * on the consumer's subject is settled (applied, or dead-lettered) or goes before it in the same
 * serial run. Earlier messages still unsettled can only lie above the consumer's ack floor, so the
 * guard looks at the stream between the floor and S: in steady state that gap holds only messages
 * this process settled itself, and the check costs nothing.
 */

/** A message about to be applied. */
export interface OrderedCandidate {
  seq: number;
  key: string;
}

/** A message of the consumer's subject between its ack floor and the candidates. */
export interface GapMessage {
  seq: number;
  /** Undefined for a message the consumer rejects on sight (it will be dead-lettered, never applied). */
  key: string | undefined;
  settled: boolean;
}

/**
 * For each candidate that must wait, the sequence of the earliest unsettled message of its key
 * that is not itself a candidate. Candidates must then be applied in sequence order, in one serial
 * run; a candidate with an earlier candidate of its key waiting waits too (the earlier one's
 * blocker is earlier still).
 */
export function heldCandidates(candidates: readonly OrderedCandidate[], gap: readonly GapMessage[]): Map<number, number> {
  const candidateSeqs = new Set(candidates.map((c) => c.seq));
  const firstBlocker = new Map<string, number>();
  for (const message of gap) {
    if (message.settled || message.key === undefined || candidateSeqs.has(message.seq)) continue;
    const current = firstBlocker.get(message.key);
    if (current === undefined || message.seq < current) firstBlocker.set(message.key, message.seq);
  }
  const held = new Map<number, number>();
  for (const candidate of candidates) {
    const blocker = firstBlocker.get(candidate.key);
    if (blocker !== undefined && blocker < candidate.seq) held.set(candidate.seq, blocker);
  }
  return held;
}

/**
 * How long a message may wait for an earlier one before it is applied anyway: longer than the
 * earlier message can stay unsettled while anything still works on it (every delivery's ack wait
 * and retry delay). Past it the earlier message is lost to every consumer (e.g. it ran out of
 * deliveries while no process could write its dead letter); waiting longer would stop its key for
 * good, so the later one goes ahead, logged and counted.
 */
export function holdLimitMs(policy: { maxDeliver: number; ackWaitMs: number; maxRetryDelayMs: number }): number {
  return policy.maxDeliver * (policy.ackWaitMs + policy.maxRetryDelayMs);
}

/** The inbox key recording that the message at `seq` with `eventId` was dead-lettered (not applied). */
export function deadLetterMark(seq: number, eventId: string): string {
  return `${seq}:${eventId}`;
}

/** A message above the guard's floor, as the floor sees it. */
export interface FloorEntry {
  seq: number;
  settled: boolean;
  /** In this process's hands (received here): never passed unsettled, whatever its age. */
  inHand: boolean;
  /** When the guard first knew of it (ms). */
  since: number;
}

/**
 * How far the guard's floor may rise: past every message known settled, up to the first one that
 * is not (in hand here or elsewhere). `entries` are the known messages above `floor` in sequence
 * order; every message of the subject up to `scannedThrough` is among them. A message elsewhere
 * unsettled for longer than the hold limit is lost to every consumer (see holdLimitMs): the floor
 * passes it, reported in `passedUnsettled`, rather than stop for good. One in this process's hands
 * is not passed: later messages of its key would overtake it here.
 */
export function raisedFloor(
  floor: number,
  entries: readonly FloorEntry[],
  scannedThrough: number,
  now: number,
  holdLimit: number,
): { floor: number; passedUnsettled: number[] } {
  const passedUnsettled: number[] = [];
  for (const entry of entries) {
    if (entry.seq <= floor) continue;
    if (entry.seq > scannedThrough) break;
    if (entry.settled) continue;
    if (!entry.inHand && now - entry.since >= holdLimit) {
      passedUnsettled.push(entry.seq);
      continue;
    }
    return { floor: Math.max(floor, entry.seq - 1), passedUnsettled };
  }
  return { floor: Math.max(floor, scannedThrough), passedUnsettled };
}
