import { AppError } from '../platform/errors.js';
import { newUlid } from '../platform/ids.js';
import type { EventBus, StoredMessage } from './bus/event-bus.js';
import { DEAD_LETTER_HEADERS } from './dead-letter.logic.js';
import { oneLine } from './outbox-relay.js';

// "Dead letters" is the code's one name for them. Names on the wire keep saying "dlq" because
// they are contracts: the CATALOG_DLQ stream and its CATALOG.dlq subjects, the x-dlq-* headers,
// the dlq_depth / dlq_alert metrics, POST /admin/v1/catalog/dlq/replay and the config's dlqStream
// (named after CATALOG_DLQ_STREAM).

export interface DeadLetterLocation {
  stream: string;
  /** `CATALOG.dlq`: dead letters sit at `<prefix>.<original subject>`. */
  subjectPrefix: string;
}

/** The filter of POST /admin/v1/catalog/dlq/replay. */
export interface DeadLetterFilter {
  /** Original subject, NATS wildcards allowed, e.g. `content.play_package.built.v1` or `content.>`. */
  subject?: string;
  eventType?: string;
  /** On the dead-lettering time. */
  from?: Date;
  to?: Date;
  eventIds?: string[];
  maxCount?: number;
  /** List what would be replayed, change nothing. */
  dryRun?: boolean;
}

export interface DeadLetter {
  seq: number;
  originalSubject: string;
  eventId?: string;
  eventType?: string;
  consumer?: string;
  deadLetteredAt: string;
  error?: string;
  retries?: number;
}

function toDeadLetter(message: StoredMessage, deadLetterStream: DeadLetterLocation): DeadLetter {
  const h = message.headers;
  return {
    seq: message.seq,
    originalSubject: h[DEAD_LETTER_HEADERS.originalSubject] ?? message.subject.slice(deadLetterStream.subjectPrefix.length + 1),
    eventId: h[DEAD_LETTER_HEADERS.eventId],
    eventType: h[DEAD_LETTER_HEADERS.eventType],
    consumer: h[DEAD_LETTER_HEADERS.consumer],
    deadLetteredAt: h[DEAD_LETTER_HEADERS.deadLetteredAt] ?? message.time.toISOString(),
    error: h[DEAD_LETTER_HEADERS.error],
    retries: h[DEAD_LETTER_HEADERS.retries] !== undefined ? Number(h[DEAD_LETTER_HEADERS.retries]) : undefined,
  };
}

/** A dead letter as stored in the DLQ stream, with what its headers say. */
export interface SelectedDeadLetter {
  message: StoredMessage;
  letter: DeadLetter;
}

/** The dead letters matching `filter`, oldest first (at most `filter.maxCount`). */
export async function selectDeadLetters(
  bus: EventBus,
  deadLetterStream: DeadLetterLocation,
  filter: DeadLetterFilter,
): Promise<SelectedDeadLetter[]> {
  const stored = await bus.readStream(deadLetterStream.stream, {
    filterSubject: `${deadLetterStream.subjectPrefix}.${filter.subject ?? '>'}`,
  });
  const out: SelectedDeadLetter[] = [];
  for (const message of stored) {
    if (filter.maxCount !== undefined && out.length >= filter.maxCount) break;
    const letter = toDeadLetter(message, deadLetterStream);
    const at = new Date(letter.deadLetteredAt).getTime();
    if (filter.eventType && letter.eventType !== filter.eventType) continue;
    if (filter.eventIds && (!letter.eventId || !filter.eventIds.includes(letter.eventId))) continue;
    if (filter.from && at < filter.from.getTime()) continue;
    if (filter.to && at >= filter.to.getTime()) continue;
    out.push({ message, letter });
  }
  return out;
}

export async function listDeadLetters(
  bus: EventBus,
  deadLetterStream: DeadLetterLocation,
  filter: DeadLetterFilter = {},
): Promise<DeadLetter[]> {
  return (await selectDeadLetters(bus, deadLetterStream, filter)).map((m) => m.letter);
}

/**
 * Sends matching dead letters back to their original subjects, oldest first, then removes each
 * from the DLQ (see replaySelected).
 */
export async function replayDeadLetters(
  bus: EventBus,
  deadLetterStream: DeadLetterLocation,
  filter: DeadLetterFilter,
): Promise<{ matched: number; replayed: number; letters: DeadLetter[] }> {
  const found = await selectDeadLetters(bus, deadLetterStream, filter);
  if (filter.dryRun) return { matched: found.length, replayed: 0, letters: found.map((f) => f.letter) };
  return {
    matched: found.length,
    replayed: await replaySelected(bus, deadLetterStream, found),
    letters: found.map((f) => f.letter),
  };
}

/**
 * Replays exactly the selected dead letters, by their DLQ sequence (never by event id: producers
 * choose event ids, and two tenants' letters may share one). Each goes back to its original
 * subject with a NEW Nats-Msg-Id (design §4: the original id may still be inside the stream's
 * duplicate window and would be dropped), then is deleted from the DLQ. The body and its eventId
 * are unchanged, so a consumer that already handled the event (another durable on the same
 * subject) skips it through its inbox, and the consumer that failed, which has no inbox row,
 * handles it. Returns how many were replayed; stops at the first that cannot be.
 */
export async function replaySelected(
  bus: EventBus,
  deadLetterStream: DeadLetterLocation,
  selected: readonly SelectedDeadLetter[],
): Promise<number> {
  let replayed = 0;
  for (const { message, letter } of selected) {
    try {
      // Header values and the message id are wire names (see the top of the file).
      const headers: Record<string, string> = {
        'Content-Type': 'application/json',
        'x-replayed-from': 'dlq',
        'x-dlq-seq': String(message.seq),
      };
      if (message.headers.traceparent) headers.traceparent = message.headers.traceparent;
      await bus.publish(letter.originalSubject, message.data, {
        msgId: `${letter.eventId ?? 'unknown'}.dlq-replay.${newUlid()}`,
        headers,
      });
      await bus.deleteMessage(deadLetterStream.stream, message.seq);
    } catch (error) {
      throw new AppError('events.replay_failed', `DLQ replay stopped at sequence ${message.seq}: ${oneLine(error)}`, {
        status: 503,
        details: { matched: selected.length, replayed, stoppedAt: message.seq },
        cause: error,
      });
    }
    replayed += 1;
  }
  return replayed;
}

export async function deadLetterDepth(bus: EventBus, deadLetterStream: Pick<DeadLetterLocation, 'stream'>): Promise<number> {
  return (await bus.streamState(deadLetterStream.stream)).messages;
}
