import { randomBytes } from 'node:crypto';
import { activeTraceparent } from './telemetry.js';

/**
 * W3C Trace Context, the one module of the project that reads and writes `traceparent`
 * (`<version>-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`): HTTP requests continue a
 * caller's, and every event message carries one, so a consumer's work joins the producer's trace.
 */
const TRACEPARENT_RE = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export interface TraceContext {
  traceparent: string;
  traceId: string;
  /** True when the caller sent none or a malformed one and a new trace was started. */
  started: boolean;
}

export function parseTraceparent(value: string | undefined): { traceId: string; parentId: string; flags: string } | undefined {
  if (!value) return undefined;
  const match = TRACEPARENT_RE.exec(value.trim());
  if (!match) return undefined;
  const [, version, traceId, parentId, flags] = match;
  // Version ff is invalid; all-zero ids are invalid (W3C Trace Context §3.2.2).
  if (version === 'ff' || /^0+$/.test(traceId) || /^0+$/.test(parentId)) return undefined;
  return { traceId, parentId, flags };
}

/**
 * Keeps a valid incoming trace (as a new child span), or starts one; never an error. Inside a
 * request the server span already did exactly that (the trace-context stage, platform/http/stages/trace-context.ts), so its context is used and
 * logs, response headers and forwarded headers name the span the trace backend shows.
 */
export function continueTrace(incoming: string | undefined): TraceContext {
  const active = activeTraceparent();
  if (active) return { ...active, started: parseTraceparent(incoming)?.traceId !== active.traceId };
  const parsed = parseTraceparent(incoming);
  const spanId = randomBytes(8).toString('hex');
  if (parsed) return { traceparent: `00-${parsed.traceId}-${spanId}-${parsed.flags}`, traceId: parsed.traceId, started: false };
  const traceId = randomBytes(16).toString('hex');
  return { traceparent: `00-${traceId}-${spanId}-01`, traceId, started: true };
}

export function isTraceparent(value: unknown): value is string {
  return typeof value === 'string' && parseTraceparent(value) !== undefined;
}

export function newTraceparent(random: (bytes: number) => Buffer = randomBytes): string {
  return `00-${random(16).toString('hex')}-${random(8).toString('hex')}-01`;
}

/** Same trace, new span id: a consumer's emitted events are children of the consumed one. */
export function childTraceparent(parent: string | undefined, random: (bytes: number) => Buffer = randomBytes): string {
  const parsed = parseTraceparent(parent);
  if (!parsed) return newTraceparent(random);
  return `00-${parsed.traceId}-${random(8).toString('hex')}-${parsed.flags}`;
}
