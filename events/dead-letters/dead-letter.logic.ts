import type { Headers } from '../bus/event-bus.js';

export const DEAD_LETTER_HEADERS = {
  originalSubject: 'x-original-subject',
  error: 'x-error',
  stack: 'x-stack',
  retries: 'x-retries',
  deliveries: 'x-deliveries',
  deadLetteredAt: 'x-dead-lettered-at',
  eventId: 'x-event-id',
  eventType: 'x-event-type',
  consumer: 'x-consumer',
  originalStream: 'x-original-stream',
  originalSeq: 'x-original-seq',
  /** The envelope's tenant; empty when the body names none. Replay selects by it without the body. */
  tenantId: 'x-tenant-id',
} as const;

const ERROR_MAX = 500;
const STACK_MAX = 2_000;

/** Header values are one line: NATS headers end at CR/LF. */
export function headerValue(text: string, max: number): string {
  const flat = text
    .replace(/[\r\n]+\s*/g, ' | ')
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export interface DeadLetterInput {
  originalSubject: string;
  originalStream: string;
  originalSeq: number;
  consumer: string;
  deliveryCount: number;
  error: unknown;
  now: Date;
  eventId?: string;
  eventType?: string;
  tenantId?: string;
  traceparent?: string;
  /**
   * The install directory: stack frames under it are written relative to it, so a dead letter
   * says where in the code it failed without telling where (and as whom) the service is installed.
   */
  projectRoot?: string;
}

/** `stack` with every path under `root` (plain or as a file:// URL) made relative to it. */
export function relativeStack(stack: string, root: string | undefined): string {
  if (!root) return stack;
  const dir = root.endsWith('/') ? root : `${root}/`;
  const url = `file://${dir}`;
  return stack.split(url).join('').split(dir).join('');
}

/**
 * Headers of a dead letter (spec: x-original-subject, x-error, x-stack, x-retries, plus what an
 * operator needs to find and replay it, selecting by headers alone). x-retries counts redeliveries, i.e. deliveries - 1: 5
 * after the sixth and last delivery, 0 for a message dead-lettered on sight (unparseable or
 * invalid). x-deliveries carries the raw count.
 */
export function deadLetterHeaders(input: DeadLetterInput): Headers {
  const error = input.error instanceof Error ? input.error : new Error(String(input.error));
  const code = (error as { code?: unknown }).code;
  const headers: Headers = {
    [DEAD_LETTER_HEADERS.originalSubject]: input.originalSubject,
    [DEAD_LETTER_HEADERS.error]: headerValue(
      `${typeof code === 'string' ? `${code}: ` : ''}${error.message || error.name}`,
      ERROR_MAX,
    ),
    [DEAD_LETTER_HEADERS.stack]: headerValue(relativeStack(error.stack ?? error.message, input.projectRoot), STACK_MAX),
    [DEAD_LETTER_HEADERS.retries]: String(Math.max(0, input.deliveryCount - 1)),
    [DEAD_LETTER_HEADERS.deliveries]: String(input.deliveryCount),
    [DEAD_LETTER_HEADERS.deadLetteredAt]: input.now.toISOString(),
    [DEAD_LETTER_HEADERS.consumer]: input.consumer,
    [DEAD_LETTER_HEADERS.originalStream]: input.originalStream,
    [DEAD_LETTER_HEADERS.originalSeq]: String(input.originalSeq),
    'Content-Type': 'application/json',
  };
  // Always written, empty when unknown, so a reader can tell "no tenant" from a letter written
  // before the header existed (whose body it must then read).
  headers[DEAD_LETTER_HEADERS.tenantId] = input.tenantId ?? '';
  if (input.eventId) headers[DEAD_LETTER_HEADERS.eventId] = input.eventId;
  if (input.eventType) headers[DEAD_LETTER_HEADERS.eventType] = input.eventType;
  if (input.traceparent) headers.traceparent = input.traceparent;
  return headers;
}

export function deadLetterSubject(prefix: string, originalSubject: string): string {
  return `${prefix}.${originalSubject}`;
}

/**
 * One dead letter per consumer and stream message: the runner and the MAX_DELIVERIES safety net
 * may both try, and the DLQ stream's duplicate window keeps one.
 */
export function deadLetterMsgId(consumer: string, stream: string, seq: number): string {
  // A wire name (Nats-Msg-Id): changing it would let a dead letter written before the change and
  // its retry after it both land.
  return `dlq.${stream}.${consumer}.${seq}`;
}

/**
 * The Nats-Msg-Id of a dead letter's replay: new relative to the original event's (design §4: the
 * original may still be inside its stream's duplicate window), and the same for every replay of
 * this letter, so replays running at once publish it once; the first one stored moved it.
 */
export function deadLetterReplayMsgId(deadLetterStream: string, seq: number): string {
  // A wire name (Nats-Msg-Id), like deadLetterMsgId.
  return `dlq-replay.${deadLetterStream}.${seq}`;
}
