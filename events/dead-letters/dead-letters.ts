import { AppError } from '../../platform/errors/errors.js';
import type { MessageBus, StoredMessage, StreamStore } from '../bus/event-bus.js';
import { DEAD_LETTER_HEADERS, deadLetterReplayMsgId } from './dead-letter.logic.js';
import { oneLine } from '../error-text.logic.js';

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
  /** Only letters whose event names this tenant (and so only letters with an event id). */
  tenantId?: string;
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

function matchesHeaders(letter: DeadLetter, filter: DeadLetterFilter): boolean {
  const at = new Date(letter.deadLetteredAt).getTime();
  if (filter.eventType && letter.eventType !== filter.eventType) return false;
  if (filter.eventIds && (!letter.eventId || !filter.eventIds.includes(letter.eventId))) return false;
  if (filter.tenantId && !letter.eventId) return false;
  if (filter.from && at < filter.from.getTime()) return false;
  if (filter.to && at >= filter.to.getTime()) return false;
  return true;
}

function tenantOfBody(data: Uint8Array): string {
  try {
    const envelope = JSON.parse(Buffer.from(data).toString('utf8')) as { tenantId?: unknown };
    return typeof envelope.tenantId === 'string' ? envelope.tenantId : '';
  } catch {
    return '';
  }
}

/**
 * The tenant a letter's event names: its x-tenant-id header (empty: none). A letter written before
 * that header existed has no such header; its body is read once to learn it. Those letters age out
 * with the DLQ stream's retention (90 days), after which every scan is headers only.
 */
async function tenantOf(bus: StreamStore, stream: string, message: StoredMessage): Promise<string> {
  const header = message.headers[DEAD_LETTER_HEADERS.tenantId];
  if (header !== undefined) return header;
  const stored = await bus.getMessage(stream, message.seq);
  return stored ? tenantOfBody(stored.data) : '';
}

/**
 * The dead letters matching `filter`, oldest first, at most `filter.maxCount`: a scan of the DLQ's
 * headers a page at a time (the subject filtered by the server), deciding from headers alone and
 * stopping once it has enough. No body is read (but a legacy letter's, see tenantOf), so what a
 * scan holds is one page of headers and the letters chosen, whatever the DLQ holds.
 */
export async function selectDeadLetters(
  bus: StreamStore,
  deadLetterStream: DeadLetterLocation,
  filter: DeadLetterFilter,
): Promise<DeadLetter[]> {
  const chosen: DeadLetter[] = [];
  const limit = filter.maxCount ?? Number.POSITIVE_INFINITY;
  if (limit <= 0) return chosen;
  const pages = bus.readPages(deadLetterStream.stream, {
    filterSubject: `${deadLetterStream.subjectPrefix}.${filter.subject ?? '>'}`,
    headersOnly: true,
  });
  for await (const page of pages) {
    for (const message of page) {
      const letter = toDeadLetter(message, deadLetterStream);
      if (!matchesHeaders(letter, filter)) continue;
      if (filter.tenantId && (await tenantOf(bus, deadLetterStream.stream, message)) !== filter.tenantId) continue;
      chosen.push(letter);
      if (chosen.length >= limit) return chosen;
    }
  }
  return chosen;
}

export async function listDeadLetters(
  bus: StreamStore,
  deadLetterStream: DeadLetterLocation,
  filter: DeadLetterFilter = {},
): Promise<DeadLetter[]> {
  return selectDeadLetters(bus, deadLetterStream, filter);
}

export interface DeadLetterReplay {
  matched: number;
  /** Letters this call moved back to their subjects; one another replay moved first is not counted. */
  replayed: number;
  letters: DeadLetter[];
}

/** Selects the matching dead letters (see selectDeadLetters) and, unless a dry run, replays them. */
/** What a replay of dead letters needs of the bus: the DLQ stream's store, and a publish. */
export type DeadLetterReplayBus = StreamStore & Pick<MessageBus, 'publish'>;

export async function replayDeadLetters(
  bus: DeadLetterReplayBus,
  deadLetterStream: DeadLetterLocation,
  filter: DeadLetterFilter,
): Promise<DeadLetterReplay> {
  const letters = await selectDeadLetters(bus, deadLetterStream, filter);
  const replayed = filter.dryRun || !letters.length ? 0 : await replaySelected(bus, deadLetterStream, letters);
  return { matched: letters.length, replayed, letters };
}

/**
 * Replays exactly the selected dead letters, oldest first, by their DLQ sequence (never by event id:
 * producers choose event ids, and two tenants' letters may share one). Each is fetched, published
 * back to its original subject, then deleted from the DLQ. Its message id is deadLetterReplayMsgId:
 * new relative to the original event's, and the same for every replay of this letter, so the
 * publish is the claim: of replays running at once, one stores the copy and the others are told
 * "duplicate" and count nothing; a letter already gone was replayed by another. The body and its
 * eventId are unchanged, so a consumer that already handled the event (another durable on the same
 * subject) skips it through its inbox, and the consumer that failed it handles it. Returns how many
 * this call moved; stops at the first letter that cannot be replayed.
 */
export async function replaySelected(
  bus: DeadLetterReplayBus,
  deadLetterStream: DeadLetterLocation,
  selected: readonly DeadLetter[],
): Promise<number> {
  let replayed = 0;
  for (const letter of selected) {
    try {
      const message = await bus.getMessage(deadLetterStream.stream, letter.seq);
      if (!message) continue;
      const ack = await bus.publish(letter.originalSubject, message.data, {
        msgId: deadLetterReplayMsgId(deadLetterStream.stream, letter.seq),
        headers: replayHeaders(message),
      });
      // Whoever stored the copy, the letter is back on its subject: it leaves the DLQ.
      await bus.deleteMessage(deadLetterStream.stream, letter.seq);
      if (!ack.duplicate) replayed += 1;
    } catch (error) {
      throw new AppError('events.replay_failed', `DLQ replay stopped at sequence ${letter.seq}: ${oneLine(error)}`, {
        status: 503,
        details: { matched: selected.length, replayed, stoppedAt: letter.seq },
        cause: error,
      });
    }
  }
  return replayed;
}

function replayHeaders(message: StoredMessage): Record<string, string> {
  // Header values are wire names (see the top of the file).
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'x-replayed-from': 'dlq',
    'x-dlq-seq': String(message.seq),
  };
  if (message.headers.traceparent) headers.traceparent = message.headers.traceparent;
  return headers;
}

export async function deadLetterDepth(bus: StreamStore, deadLetterStream: Pick<DeadLetterLocation, 'stream'>): Promise<number> {
  return (await bus.streamState(deadLetterStream.stream)).messages;
}
