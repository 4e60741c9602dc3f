import { randomBytes } from 'node:crypto';

/**
 * W3C Trace Context `traceparent` (version 00). Every message carries one so a consumer's work
 * and the events it emits join the producer's trace even when no tracer is installed yet.
 */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export function isTraceparent(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const m = TRACEPARENT.exec(value);
  return !!m && !/^0+$/.test(m[1]) && !/^0+$/.test(m[2]);
}

export function newTraceparent(random: (bytes: number) => Buffer = randomBytes): string {
  return `00-${random(16).toString('hex')}-${random(8).toString('hex')}-01`;
}

/** Same trace, new span id: the consumer's emitted events are children of the consumed one. */
export function childTraceparent(parent: string | undefined, random: (bytes: number) => Buffer = randomBytes): string {
  if (!isTraceparent(parent)) return newTraceparent(random);
  const [, traceId, , flags] = TRACEPARENT.exec(parent)!;
  return `00-${traceId}-${random(8).toString('hex')}-${flags}`;
}
