import { Agent, type Dispatcher } from 'undici';
import { classifyAnswer, classifyTransportFailure, type AttemptOutcome } from './subgraph-answer.logic.js';

/**
 * The connections to the subgraphs: kept alive between requests, and at most `maxPerSubgraph` to
 * each replica. A burst of client requests then waits in the gateway for a free connection instead
 * of opening a socket (and a request the subgraph must accept at once) per request in flight.
 */
export function subgraphDispatcher(maxPerSubgraph: number): Agent {
  return new Agent({ connections: maxPerSubgraph, keepAliveTimeout: 30_000, pipelining: 1 });
}

/** One subgraph request as sent over HTTP: the JSON body and the headers. */
export interface SubgraphHttpRequest {
  body: string;
  headers: Record<string, string>;
}

interface Target {
  origin: string;
  path: string;
}

/** A replica's URL, parsed once (the gateway fetches the same few URLs all the time). */
const targets = new Map<string, Target>();

function targetOf(url: string): Target {
  let target = targets.get(url);
  if (!target) {
    const parsed = new URL(url);
    target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    if (targets.size < 64) targets.set(url, target);
  }
  return target;
}

/**
 * One attempt at one replica, classified where it ends (subgraph-answer.logic.ts): its answer read
 * whole within `timeoutMs` (headers and body: a replica that stops mid-answer fails the attempt).
 * The deadline is a timer of its own, cleared when the attempt ends.
 *
 * It sends with undici's `request` rather than its WHATWG `fetch`, whose streams, Request and
 * Response objects were the largest share of the gateway's own CPU under load (bench/README.md,
 * gateway profile): a subgraph answer is one small JSON document, read whole.
 */
export async function attemptFetch(
  dispatcher: Dispatcher,
  url: string,
  request: SubgraphHttpRequest,
  timeoutMs: number,
): Promise<AttemptOutcome> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  try {
    const answer = await dispatcher.request({
      ...targetOf(url),
      method: 'POST',
      headers: request.headers,
      body: request.body,
      signal: deadline.signal,
    });
    return classifyAnswer(answer.statusCode, await answer.body.text());
  } catch (error) {
    return classifyTransportFailure({ code: errorCode(error), timedOut: deadline.signal.aborted, timeoutMs });
  } finally {
    // Cleared once the attempt ends: `AbortSignal.timeout` cannot be, and fired for every attempt
    // long after its answer, building a TimeoutError (and its stack) each time (1.9 % of the
    // gateway's busy time on the nested page).
    clearTimeout(timer);
  }
}

const PROBE_TIMEOUT_MS = 2_000;

/**
 * Whether a replica says it is ready (its /readyz answers 2xx): the probe that brings a failed
 * replica back, and the watch that takes a draining or broken one (its database lost) out.
 */
export async function probeReadiness(dispatcher: Dispatcher, url: string): Promise<boolean> {
  const { origin } = targetOf(url);
  try {
    const answer = await dispatcher.request({
      origin,
      path: '/readyz',
      method: 'GET',
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    await answer.body.dump();
    return answer.statusCode >= 200 && answer.statusCode < 300;
  } catch {
    return false;
  }
}

function errorCode(error: unknown): string | undefined {
  const { code, cause } = (error ?? {}) as { code?: unknown; cause?: { code?: unknown } };
  if (typeof cause?.code === 'string' && (code === undefined || code === 'UND_ERR_SOCKET')) return cause.code;
  return typeof code === 'string' ? code : undefined;
}
