import type { BusMessage } from '../bus/event-bus.js';
import type { ConsumedEnvelope } from '../envelope.js';
import type { OrderedCandidate } from './order-hold.logic.js';

// What the consumer runner and the order guard both know of a message in hand: the runner admits
// it, the guard may hold it back, and both keep its ack wait from running out.

/** A message admitted by the runner, on its way to a verdict. */
export interface PendingMessage {
  m: BusMessage;
  envelope: ConsumedEnvelope;
  /** The orderKey of the message, when the consumer keeps an order. */
  key?: string;
}

/** A message's sequence and, when the consumer keeps an order, its key. */
export interface Sequenced {
  m: { seq: number };
  key?: string;
}

/** How often a message in hand restarts its ack wait: twice per ack wait, at most ten times a second. */
export function keepAliveIntervalMs(ackWaitMs: number): number {
  return Math.max(100, Math.floor(ackWaitMs / 2));
}

/** The candidates the order guard checks: the messages that have a key. */
export function orderCandidates(messages: readonly Sequenced[]): OrderedCandidate[] {
  return messages.flatMap(({ m, key }) => (key === undefined ? [] : [{ seq: m.seq, key }]));
}
