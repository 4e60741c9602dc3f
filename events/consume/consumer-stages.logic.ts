import { eventKey } from '../ledger/event-key.logic.js';
import type { Sequenced } from '../ordering/pending.logic.js';
import { databaseUnreachable } from './verdict.logic.js';

// The consumer runner's decisions that need no I/O (consumer-runner.ts and its stages apply them).

/** The messages in stream order (a batch can gather them out of it). */
export function inStreamOrder<T extends Sequenced>(messages: readonly T[]): T[] {
  return [...messages].sort((a, b) => a.m.seq - b.m.seq);
}

/**
 * One message per event, in the order the events first appear: a batch may hold an event twice
 * (a redelivery beside its first delivery), and it is handled once, with its latest delivery. An
 * event is its tenant and id: two tenants' producers may choose the same id (events/ledger/inbox.ts).
 */
export function onePerEvent<T extends { envelope: { tenantId?: string; eventId: string } }>(messages: readonly T[]): T[] {
  return [...new Map(messages.map((message) => [eventKey(message.envelope), message])).values()];
}

/**
 * What a failed batch does next: wait for the database (no message could succeed meanwhile), or
 * hand each message to the one-message path, which finds the one that failed and gives every
 * message its own verdict.
 */
export function afterBatchFailure(error: unknown): 'waitForDatabase' | 'oneAtATime' {
  return databaseUnreachable(error) ? 'waitForDatabase' : 'oneAtATime';
}
