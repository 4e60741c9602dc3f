import type { OrderedCandidate } from '../ordering/order-hold.logic.js';
import { databaseUnreachable } from './verdict.logic.js';

// The consumer runner's decisions that need no I/O (consumer-runner.ts and its stages apply them).

/** A message's sequence and, when the consumer keeps an order, its key. */
interface Sequenced {
  m: { seq: number };
  key?: string;
}

/** How often a message in hand restarts its ack wait: twice per ack wait, at most ten times a second. */
export function keepAliveIntervalMs(ackWaitMs: number): number {
  return Math.max(100, Math.floor(ackWaitMs / 2));
}

/** The messages in stream order (a batch can gather them out of it). */
export function inStreamOrder<T extends Sequenced>(messages: readonly T[]): T[] {
  return [...messages].sort((a, b) => a.m.seq - b.m.seq);
}

/** The candidates the order guard checks: the messages that have a key. */
export function orderCandidates(messages: readonly Sequenced[]): OrderedCandidate[] {
  return messages.flatMap(({ m, key }) => (key === undefined ? [] : [{ seq: m.seq, key }]));
}

/**
 * One message per event, in the order the events first appear: a batch may hold an event twice
 * (a redelivery beside its first delivery), and it is handled once, with its latest delivery. An
 * event is its tenant and id: two tenants' producers may choose the same id (events/consume/inbox.ts).
 */
export function onePerEvent<T extends { envelope: { tenantId?: string; eventId: string } }>(messages: readonly T[]): T[] {
  return [...new Map(messages.map((message) => [eventKey(message.envelope), message])).values()];
}

/**
 * An event as a consumer's inbox knows it, as one string: its tenant and its id, since producers
 * choose event ids and two tenants' producers may choose the same one (events/consume/inbox.ts). A
 * missing tenant is the inbox's "any tenant" ('').
 */
export function eventKey(event: { tenantId?: string; eventId: string }): string {
  return `${event.tenantId ?? ''}\u0000${event.eventId}`;
}
/**
 * What a failed batch does next: wait for the database (no message could succeed meanwhile), or
 * hand each message to the one-message path, which finds the one that failed and gives every
 * message its own verdict.
 */
export function afterBatchFailure(error: unknown): 'waitForDatabase' | 'oneAtATime' {
  return databaseUnreachable(error) ? 'waitForDatabase' : 'oneAtATime';
}
