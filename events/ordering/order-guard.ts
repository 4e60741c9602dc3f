import type { Db } from '../../platform/db/database.js';
import type { Clock } from '../../platform/clock.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { StreamStore } from '../bus/event-bus.js';
import { readSettledThrough, raiseSettledThrough, resetSettledThrough } from '../ledger/consumer-watermark.js';
import { ANY_TENANT, settledAmong } from '../ledger/inbox.js';
import type { OrderedCandidate } from './order-hold.logic.js';
import {
  advance,
  concludeCheck,
  gapToRead,
  initialOrderState,
  openInGap,
  settledByInbox,
  type GapRead,
  type LocalFact,
  type OrderFacts,
  type OpenMessage,
  type OrderState,
} from './order-state.logic.js';

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

/**
 * The I/O half of the producer-order rule. Its floor is the consumer's own: every message of the
 * subject at or below it is settled by the inbox (applied) or a dead-letter mark, as this process
 * or the database showed. Above the floor the guard reads the stream's messages once each (none in
 * steady state for those this process received) and asks the inbox, in one statement, about those
 * another process had; then it raises the floor past what is settled and writes it back for the
 * other replicas and the next start (events/ledger/consumer-watermark.ts).
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
  const { db, durable, clock, logger } = options;
  let state: OrderState = initialOrderState;
  /** What this process received and settled since the last step, applied at the next. */
  let local: LocalFact[] = [];
  const now = () => clock.now().getTime();
  /** Applies the facts, and those this process added while they were gathered, to the latest state. */
  const step = (facts: OrderFacts = {}) => {
    state = advance(state, { ...facts, local });
    local = [];
  };

  return {
    seen(seq, key, eventId, tenantId = ANY_TENANT) {
      local.push({ kind: 'seen', seq, key, eventId, tenantId, at: now() });
    },
    settled(seq) {
      local.push({ kind: 'settled', seq });
    },
    async check(candidates) {
      if (!candidates.length) return new Map();
      if (state.floor === undefined) step({ floorLoaded: await loadFloor(options) });
      const from = state.floor ?? 0;
      const top = Math.max(...candidates.map((c) => c.seq)) - 1;
      if (top <= from) return new Map();
      step({ gapFrom: from });
      step({ gapRead: await readGap(options, state, top) });
      step({ inboxSettled: await settledInInbox(options, openInGap(state, candidates, from, top)) });
      const outcome = concludeCheck(state, { candidates, from, top, now: now(), holdLimitMs: options.holdLimitMs });
      state = outcome.state;
      for (const { seq, eventId } of outcome.passedUnsettled)
        logger.warn({ seq, eventId }, 'a message stayed unsettled past the hold limit; the order floor passes it');
      if (outcome.writeFloor !== undefined) await raiseSettledThrough(db, durable, outcome.writeFloor, clock.now());
      return outcome.held;
    },
  };
}

/** The stored floor; the ack floor for a consumer without one, or whose stream was recreated. */
async function loadFloor({ bus, db, stream, durable, clock, logger }: OrderGuardOptions): Promise<number> {
  const stored = await readSettledThrough(db, durable);
  const { lastSeq } = await bus.streamState(stream);
  if (stored !== undefined && stored <= lastSeq) return stored;
  const ackFloor = await bus.consumerAckFloor(stream, durable);
  if (stored !== undefined) {
    logger.warn(
      { stored, lastSeq, ackFloor },
      'the stream is behind the stored order floor (recreated?); starting again from the ack floor',
    );
    await resetSettledThrough(db, durable, ackFloor, clock.now());
  } else await raiseSettledThrough(db, durable, ackFloor, clock.now());
  return ackFloor;
}

/** The gap's messages up to `top` the state does not know yet, read from the stream (once each). */
async function readGap(options: OrderGuardOptions, state: OrderState, top: number): Promise<OrderFacts['gapRead']> {
  const range = gapToRead(state, top);
  if (!range) return undefined;
  const stored = await options.bus.readStream(options.stream, { filterSubject: options.filterSubject, ...range });
  const messages = stored.map((message): GapRead => {
    const read = options.keyOf(message.data);
    return { seq: message.seq, tenantId: read?.tenantId ?? ANY_TENANT, read };
  });
  return { top, at: options.clock.now().getTime(), messages };
}

/** Of the gap's open messages (another process had them), those the inbox shows settled: one statement. */
async function settledInInbox(options: OrderGuardOptions, open: OpenMessage[]): Promise<number[] | undefined> {
  if (!open.length) return undefined;
  const inbox = await settledAmong(
    options.db,
    options.durable,
    open,
    open.map((m) => m.mark),
  );
  return settledByInbox(open, inbox);
}
