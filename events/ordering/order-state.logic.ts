/**
 * The order guard's state and how facts move it (issue #27). Pure: the guard (order-guard.ts)
 * gathers the facts (what this process received and settled, the stored floor, the stream's
 * messages in the gap, what the inbox shows settled, the time) and writes the floor this decides;
 * the hold rules themselves are in order-hold.logic.ts.
 *
 * Each call returns a new state. The guard applies facts to its latest state after each of its
 * awaits, so checks that overlap see each other's facts as they arrive.
 */
import { eventKey } from '../ledger/event-key.logic.js';
import { deadLetterMark, heldCandidates, raisedFloor, type OrderedCandidate } from './order-hold.logic.js';

/** What the guard knows of one message of the consumer's subject above its floor. */
export interface Known {
  /** Undefined: rejected on sight (never applied, so never waited for). */
  readonly key: string | undefined;
  readonly eventId: string | undefined;
  /** The event's tenant: an event id names an event only within its tenant (events/ledger/inbox.ts). */
  readonly tenantId: string;
  readonly settled: boolean;
  /** Received by this process (rather than read from the stream). */
  readonly inHand: boolean;
  /** When the guard first knew of it (ms): one elsewhere unsettled past the hold limit stops holding the floor. */
  readonly since: number;
}

export interface OrderState {
  readonly known: ReadonlyMap<number, Known>;
  /** Every message of the subject at or below it is settled; undefined until loaded. */
  readonly floor: number | undefined;
  /** Every message of the subject up to here is in `known` (or at or below the floor). */
  readonly scannedThrough: number;
  /** The floor last written to the database, and when (ms). */
  readonly floorWritten: number;
  readonly floorWrittenAt: number;
}

export const initialOrderState: OrderState = {
  known: new Map(),
  floor: undefined,
  scannedThrough: 0,
  floorWritten: 0,
  floorWrittenAt: Number.NEGATIVE_INFINITY,
};

/** Messages remembered above the floor; past it (a floor stuck for very long) the guard starts over from the stream. */
export const MAX_KNOWN = 100_000;
/** The floor is written back at most this often: a stored floor that lags is only slower, never wrong. */
export const FLOOR_WRITE_INTERVAL_MS = 1_000;

/** What this process did between two steps, in call order. */
export type LocalFact =
  { kind: 'seen'; seq: number; key: string; eventId: string; tenantId: string; at: number } | { kind: 'settled'; seq: number };

/** A stored message of the gap as the consumer reads it: `read` undefined when it rejects it. */
export interface GapRead {
  seq: number;
  tenantId: string;
  read: { key: string; eventId: string } | undefined;
}

/** Facts gathered by the guard; each present one is applied, in this order. */
export interface OrderFacts {
  local?: readonly LocalFact[];
  /** The floor loaded from the database (or the ack floor), which is also what is stored. */
  floorLoaded?: number;
  /** A check looks at the gap above this floor: forget everything when too much is known, skip what is known. */
  gapFrom?: number;
  /** The stream's messages read up to `top`, at `at` (ms). */
  gapRead?: { top: number; at: number; messages: readonly GapRead[] };
  /** Sequences the inbox shows applied or dead-lettered. */
  inboxSettled?: readonly number[];
}

export function advance(state: OrderState, facts: OrderFacts): OrderState {
  let next = state;
  if (facts.local?.length) next = { ...next, known: applyLocal(next.known, facts.local) };
  if (facts.floorLoaded !== undefined) next = { ...next, floor: facts.floorLoaded, floorWritten: facts.floorLoaded };
  if (facts.gapFrom !== undefined) next = openGap(next, facts.gapFrom);
  if (facts.gapRead) next = readGap(next, facts.gapRead);
  if (facts.inboxSettled?.length) next = { ...next, known: markSettled(next.known, facts.inboxSettled) };
  return next;
}

function applyLocal(known: ReadonlyMap<number, Known>, local: readonly LocalFact[]): Map<number, Known> {
  const out = new Map(known);
  for (const fact of local) {
    const entry = out.get(fact.seq);
    if (fact.kind === 'settled') {
      if (entry) out.set(fact.seq, { ...entry, settled: true });
    } else if (entry) out.set(fact.seq, { ...entry, inHand: true });
    else {
      const { key, eventId, tenantId, at } = fact;
      out.set(fact.seq, { key, eventId, tenantId, settled: false, inHand: true, since: at });
    }
  }
  return out;
}

function openGap(state: OrderState, from: number): OrderState {
  const tooMany = state.known.size > MAX_KNOWN;
  const known = tooMany ? new Map<number, Known>() : state.known;
  let scannedThrough = tooMany ? from : Math.max(state.scannedThrough, from);
  while (known.has(scannedThrough + 1)) scannedThrough += 1;
  return { ...state, known, scannedThrough };
}

function readGap(state: OrderState, gap: NonNullable<OrderFacts['gapRead']>): OrderState {
  const known = new Map(state.known);
  for (const { seq, tenantId, read } of gap.messages) {
    if (known.has(seq)) continue;
    // One rejected on sight is never applied, so nothing waits for it.
    known.set(seq, {
      key: read?.key,
      eventId: read?.eventId,
      tenantId,
      settled: read === undefined,
      inHand: false,
      since: gap.at,
    });
  }
  return { ...state, known, scannedThrough: gap.top };
}

function markSettled(known: ReadonlyMap<number, Known>, seqs: readonly number[]): Map<number, Known> {
  const out = new Map(known);
  for (const seq of seqs) {
    const entry = out.get(seq);
    if (entry) out.set(seq, { ...entry, settled: true });
  }
  return out;
}

/** The sequences to read from the stream for a gap up to `top`, once `gapFrom` was applied; undefined when all are known. */
export function gapToRead(state: OrderState, top: number): { fromSeq: number; toSeq: number } | undefined {
  return state.scannedThrough >= top ? undefined : { fromSeq: state.scannedThrough + 1, toSeq: top };
}

/** An unsettled message in the gap whose event the inbox may show settled (the candidates are not asked about). */
export interface OpenMessage {
  seq: number;
  eventId: string;
  tenantId: string;
  /** Its inbox key if it was dead-lettered. */
  mark: string;
}

export function openInGap(state: OrderState, candidates: readonly OrderedCandidate[], from: number, top: number): OpenMessage[] {
  const candidateSeqs = new Set(candidates.map((c) => c.seq));
  const open: OpenMessage[] = [];
  for (const [seq, entry] of state.known) {
    if (seq <= from || seq > top || entry.settled || entry.eventId === undefined || candidateSeqs.has(seq)) continue;
    open.push({ seq, eventId: entry.eventId, tenantId: entry.tenantId, mark: deadLetterMark(seq, entry.eventId) });
  }
  return open;
}

/** Of the open messages, those the inbox shows applied (`handled`, event keys) or dead-lettered (`deadLettered`, marks). */
export function settledByInbox(
  open: readonly OpenMessage[],
  inbox: { handled: ReadonlySet<string>; deadLettered: ReadonlySet<string> },
): number[] {
  return open.filter((m) => inbox.handled.has(eventKey(m)) || inbox.deadLettered.has(m.mark)).map((m) => m.seq);
}

export interface CheckOutcome {
  state: OrderState;
  /** Candidate sequence -> the earlier message it waits for. */
  held: Map<number, number>;
  /** Messages elsewhere unsettled past the hold limit that the floor passed (to be logged). */
  passedUnsettled: Array<{ seq: number; eventId: string | undefined }>;
  /** The floor to write back now, when it rose and the last write is old enough. */
  writeFloor: number | undefined;
}

/**
 * The end of a check over the gap (`from`, `top`]: which candidates wait, and how far the floor
 * rises past what is settled (forgetting what lies below it).
 */
export function concludeCheck(
  state: OrderState,
  check: { candidates: readonly OrderedCandidate[]; from: number; top: number; now: number; holdLimitMs: number },
): CheckOutcome {
  const gap = [];
  for (const [seq, entry] of state.known)
    if (seq > check.from && seq <= check.top) gap.push({ seq, key: entry.key, settled: entry.settled });
  const held = heldCandidates(check.candidates, gap);
  const entries = [...state.known]
    .map(([seq, { settled, inHand, since }]) => ({ seq, settled, inHand, since }))
    .sort((a, b) => a.seq - b.seq);
  const raised = raisedFloor(check.from, entries, state.scannedThrough, check.now, check.holdLimitMs);
  const passedUnsettled = raised.passedUnsettled.map((seq) => ({ seq, eventId: state.known.get(seq)?.eventId }));
  if (raised.floor <= (state.floor ?? 0)) return { state, held, passedUnsettled, writeFloor: undefined };
  const floor = raised.floor;
  const known = new Map([...state.known].filter(([seq]) => seq > floor));
  const write = floor > state.floorWritten && check.now - state.floorWrittenAt >= FLOOR_WRITE_INTERVAL_MS;
  const next: OrderState = write
    ? { ...state, known, floor, floorWritten: floor, floorWrittenAt: check.now }
    : { ...state, known, floor };
  return { state: next, held, passedUnsettled, writeFloor: write ? floor : undefined };
}
