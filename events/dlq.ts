import { AppError } from '../platform/errors.js';
import { newUlid } from '../platform/ids.js';
import type { Logger } from '../platform/logger.js';
import type { EventBus, StoredMessage } from './bus/event-bus.js';
import { systemClock, type Clock } from './clock.js';
import { DLQ_HEADERS } from './dead-letter.logic.js';
import { initialDlqAlertState, nextDlqAlertState, type DlqAlertState } from './dlq-monitor.logic.js';
import { oneLine } from './outbox-relay.js';

export interface DlqLocation {
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

function toDeadLetter(message: StoredMessage, dlq: DlqLocation): DeadLetter {
  const h = message.headers;
  return {
    seq: message.seq,
    originalSubject: h[DLQ_HEADERS.originalSubject] ?? message.subject.slice(dlq.subjectPrefix.length + 1),
    eventId: h[DLQ_HEADERS.eventId],
    eventType: h[DLQ_HEADERS.eventType],
    consumer: h[DLQ_HEADERS.consumer],
    deadLetteredAt: h[DLQ_HEADERS.deadLetteredAt] ?? message.time.toISOString(),
    error: h[DLQ_HEADERS.error],
    retries: h[DLQ_HEADERS.retries] !== undefined ? Number(h[DLQ_HEADERS.retries]) : undefined,
  };
}

async function matching(
  bus: EventBus,
  dlq: DlqLocation,
  filter: DeadLetterFilter,
): Promise<Array<{ message: StoredMessage; letter: DeadLetter }>> {
  const stored = await bus.readStream(dlq.stream, { filterSubject: `${dlq.subjectPrefix}.${filter.subject ?? '>'}` });
  const out: Array<{ message: StoredMessage; letter: DeadLetter }> = [];
  for (const message of stored) {
    if (filter.maxCount !== undefined && out.length >= filter.maxCount) break;
    const letter = toDeadLetter(message, dlq);
    const at = new Date(letter.deadLetteredAt).getTime();
    if (filter.eventType && letter.eventType !== filter.eventType) continue;
    if (filter.eventIds && (!letter.eventId || !filter.eventIds.includes(letter.eventId))) continue;
    if (filter.from && at < filter.from.getTime()) continue;
    if (filter.to && at >= filter.to.getTime()) continue;
    out.push({ message, letter });
  }
  return out;
}

export async function listDeadLetters(bus: EventBus, dlq: DlqLocation, filter: DeadLetterFilter = {}): Promise<DeadLetter[]> {
  return (await matching(bus, dlq, filter)).map((m) => m.letter);
}

/**
 * Sends matching dead letters back to their original subjects, oldest first, then removes each
 * from the DLQ. Each gets a NEW Nats-Msg-Id (design §4): the original id may still be inside the
 * stream's duplicate window and would be dropped. The body and its eventId are unchanged, so a
 * consumer that already handled the event (another durable on the same subject) skips it through
 * its inbox, and the consumer that failed, which has no inbox row, handles it.
 */
export async function replayDeadLetters(
  bus: EventBus,
  dlq: DlqLocation,
  filter: DeadLetterFilter,
): Promise<{ matched: number; replayed: number; letters: DeadLetter[] }> {
  const found = await matching(bus, dlq, filter);
  if (filter.dryRun) return { matched: found.length, replayed: 0, letters: found.map((f) => f.letter) };
  let replayed = 0;
  for (const { message, letter } of found) {
    try {
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
      await bus.deleteMessage(dlq.stream, message.seq);
    } catch (error) {
      throw new AppError('events.replay_failed', `DLQ replay stopped at sequence ${message.seq}: ${oneLine(error)}`, {
        status: 503,
        details: { matched: found.length, replayed, stoppedAt: message.seq },
        cause: error,
      });
    }
    replayed += 1;
  }
  return { matched: found.length, replayed, letters: found.map((f) => f.letter) };
}

export async function dlqDepth(bus: EventBus, dlq: Pick<DlqLocation, 'stream'>): Promise<number> {
  return (await bus.streamState(dlq.stream)).messages;
}

export interface DlqMonitor {
  /** Samples the depth once and applies the alert rule. */
  check(): Promise<DlqAlertState>;
  start(intervalMs?: number): void;
  stop(): void;
  state(): DlqAlertState;
  readonly alerting: boolean;
}

export function createDlqMonitor(options: {
  depth: () => Promise<number>;
  alertAfterMs: number;
  logger: Logger;
  clock?: Clock;
}): DlqMonitor {
  const clock = options.clock ?? systemClock;
  let state: DlqAlertState = initialDlqAlertState;
  let timer: NodeJS.Timeout | undefined;
  const monitor: DlqMonitor = {
    async check() {
      const depth = await options.depth();
      const next = nextDlqAlertState(state, depth, clock.now(), options.alertAfterMs);
      state = next.state;
      if (next.transition === 'raised') {
        options.logger.error(
          { alert: 'dlq_depth', depth, nonZeroSince: state.nonZeroSince, thresholdMinutes: options.alertAfterMs / 60_000 },
          'DLQ depth has been above 0 for longer than the alert threshold',
        );
      } else if (next.transition === 'cleared') {
        options.logger.info({ alert: 'dlq_depth' }, 'DLQ is empty again; alert cleared');
      }
      return state;
    },
    start(intervalMs = 30_000) {
      if (timer) return;
      timer = setInterval(() => {
        monitor.check().catch((error: unknown) => options.logger.warn({ err: oneLine(error) }, 'DLQ depth check failed'));
      }, intervalMs);
      timer.unref?.();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
    state: () => ({ ...state }),
    get alerting() {
      return state.alerting;
    },
  };
  return monitor;
}
