import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { ConnectionLimits, PlatformConfig } from '../config/config.js';
import type { Logger } from '../observability/logger.js';
import { errorReply } from './stages/error-replies.js';
import { endpointOf, type Exchange, type Handler, type Reply } from './pipeline.js';

/** A server's connection lifecycle: requests in flight, and the graceful drain on shutdown. */
export interface ServedServer {
  /** Requests being served right now. */
  inFlight(): number;
  readonly draining: boolean;
  /**
   * The first step of a shutdown: keep serving, but end every connection after its current reply
   * (`Connection: close`), so clients and balancers reconnect elsewhere while the process still
   * answers.
   */
  closeConnectionsAfterReply(): void;
  /**
   * Stops taking connections and lets the open ones end without cutting one under a request: the
   * listener closes, every request that still arrives on an open connection is served like any
   * other (logged, measured) and its reply ends the connection (`Connection: close`), and a
   * connection that stays silent ends at the server's own keep-alive or headers timeout. Resolves
   * when the last connection has closed. After `forceAfterMs` the remaining connections are cut.
   */
  drain(forceAfterMs?: number): Promise<void>;
}

/**
 * Finishing requests in flight gets the shutdown bound minus the drain period and a margin for
 * stopping the worker, closing pools and flushing traces.
 */
export function drainBound(config: PlatformConfig): number {
  return Math.max(1_000, config.ops.shutdownTimeoutMs - config.ops.shutdownDrainMs - 5_000);
}

/** The handler at the end of every pipeline: the endpoint `route()` chose answers. */
export const answerWithEndpoint: Handler = (exchange) => endpointOf(exchange).handle(exchange);

/** Without configuration: the same bounds as the configuration's defaults. */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 4_096,
};

/**
 * A node:http server whose request timeouts are checked every second (Node checks every 30 s by
 * default, so a slow client would outlive its timeout by up to half a minute).
 */
export function createHttpServer(limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS): http.Server {
  return http.createServer({
    connectionsCheckingInterval: 1_000,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
  });
}

/**
 * Serves `handler` (a pipeline) on a node:http server: each request becomes an Exchange, the reply
 * the pipeline returns is written whole, and the server can be drained. The pipeline's first stages
 * name, trace and log the request; this function only owns the sockets, and bounds them: Node's
 * defaults (300 s to send a request, no connection cap) let 20,000 slow clients without a token
 * take a process to its descriptor limit (issue #24).
 */
export function serve(
  server: http.Server,
  handler: Handler,
  options: { logger: Logger; limits?: ConnectionLimits },
): ServedServer {
  const { logger } = options;
  boundConnections(server, options.limits ?? DEFAULT_CONNECTION_LIMITS, logger);
  const state: ServeState = { active: new Set(), latestOnSocket: new WeakMap(), draining: false, closingConnections: false };

  // A draining server still serves what arrives on its open connections: a balancer cannot tell
  // a refusal from a failure, and a request on a kept-alive connection is one it already sent.
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    track(state, res);
    void answer(newExchange(req, res), handler, state, logger);
  });

  return {
    inFlight: () => state.active.size,
    get draining() {
      return state.draining;
    },
    // Idle keep-alive connections stay open here: closing one races a request the balancer is
    // sending on it. The balancer stops sending once /readyz says 503; the rest end at the
    // keep-alive timeout.
    closeConnectionsAfterReply: () => {
      state.closingConnections = true;
    },
    drain: (forceAfterMs = 20_000) => drainServer(server, state, logger, forceAfterMs),
  };
}

/** What serve() keeps of its requests: those in flight, and where the shutdown stands. */
interface ServeState {
  active: Set<http.ServerResponse>;
  /**
   * The latest request each connection carried. Only its reply may close the connection: a reply
   * closing it earlier would end the socket under a pipelined request already accepted behind it.
   */
  latestOnSocket: WeakMap<net.Socket, http.ServerResponse>;
  draining: boolean;
  closingConnections: boolean;
}

/** Counts a request in flight until its response closes. */
function track(state: ServeState, res: http.ServerResponse): void {
  state.active.add(res);
  state.latestOnSocket.set(res.req.socket, res);
  res.once('close', () => state.active.delete(res));
}

/** Runs the pipeline and writes its reply whole. */
async function answer(exchange: Exchange, handler: Handler, state: ServeState, logger: Logger): Promise<void> {
  let reply: Reply;
  try {
    reply = await handler(exchange);
  } catch (error) {
    // The pipeline renders every error it knows; reaching here is a bug in a stage.
    logger.error({ err: error }, 'request pipeline failed');
    reply = errorReply(error, 'problem', logger);
  }
  // Decided when the reply is written, not when the request came: a shutdown may have begun since.
  const closing = state.closingConnections && state.latestOnSocket.get(exchange.req.socket) === exchange.res;
  write(exchange.res, {
    ...reply,
    headers: { ...exchange.replyHeaders, ...reply.headers, ...(closing ? { connection: 'close' } : {}) },
  });
}

/** The drain: see ServedServer.drain. */
async function drainServer(server: http.Server, state: ServeState, logger: Logger, forceAfterMs: number): Promise<void> {
  state.draining = true;
  state.closingConnections = true;
  // net.Server#close stops accepting and waits for the connections to end. http.Server#close
  // would also destroy every idle keep-alive connection at once, and a client may be writing a
  // request on one at that instant: it would see a reset that no balancer can safely retry.
  // Instead each connection ends after its next reply (Connection: close), or, if it stays
  // silent, at the server's keep-alive timeout (announced in `Keep-Alive: timeout=…`, and Node
  // waits keepAliveTimeoutBuffer longer, so a client that honours it never races the close) or
  // its headers timeout (a connection that never sent a request).
  const closed = new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()));
  const force = setTimeout(() => {
    logger.warn({ inFlight: state.active.size }, 'drain bound reached; closing remaining connections');
    server.closeAllConnections();
  }, forceAfterMs);
  force.unref();
  try {
    await closed;
  } finally {
    clearTimeout(force);
  }
}

function newExchange(req: http.IncomingMessage, res: http.ServerResponse): Exchange {
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://localhost');
  } catch {
    url = new URL('http://localhost/');
  }
  return {
    req,
    res,
    method: (req.method ?? 'GET').toUpperCase(),
    url,
    requestId: '',
    params: {},
    replyHeaders: {},
  };
}

/**
 * A cap on open connections that stays well under the process's descriptor limit, so the
 * database, Redis and NATS always have descriptors left (the timeouts come with the server,
 * createHttpServer). Connections over the cap are dropped at accept (logged at most once a minute).
 */
function boundConnections(server: http.Server, limits: ConnectionLimits, logger: Logger): void {
  const descriptors = openFileLimit();
  server.maxConnections = descriptors ? Math.min(limits.maxConnections, Math.floor(descriptors / 4)) : limits.maxConnections;
  let lastDropLog = 0;
  server.on('drop', () => {
    if (Date.now() - lastDropLog < 60_000) return;
    lastDropLog = Date.now();
    logger.warn({ maxConnections: server.maxConnections }, 'connection cap reached; new connections are dropped');
  });
}

/** The soft limit on open files (Linux), or undefined where it cannot be read. */
function openFileLimit(): number | undefined {
  try {
    const limits = fs.readFileSync('/proc/self/limits', 'utf8');
    const soft = Number(/^Max open files\s+(\d+)/m.exec(limits)?.[1]);
    return Number.isFinite(soft) && soft > 0 ? soft : undefined;
  } catch {
    return undefined;
  }
}

function write(res: http.ServerResponse, answer: Reply): void {
  if (res.headersSent) return;
  const headers: Record<string, string | number> = { ...answer.headers };
  if (!res.req.complete) lingerForUnreadBody(res.req);
  // A 204/304 carries no body and no length (RFC 9110 §8.6).
  if (answer.status !== 204 && answer.status !== 304) headers['content-length'] = Buffer.byteLength(answer.body);
  res.writeHead(answer.status, headers);
  res.end(answer.status === 204 || answer.status === 304 ? undefined : answer.body);
}

/** How long a client may go on sending a body the server answered without reading it. */
const UNREAD_BODY_LINGER_MS = 1_000;

/**
 * A reply sent before the body was read (401 from the headers alone). Closing the socket at once
 * resets it under a client still writing its body, which then sees EPIPE instead of the answer;
 * keeping it lets a slow client hold it at whatever pace it sends (issue #24). The middle way is
 * the lingering close HTTP servers have long used: Node reads and discards a body the reply left
 * unread, for up to a second; then the socket is cut. A client that finishes in time keeps its
 * connection.
 */
function lingerForUnreadBody(req: http.IncomingMessage): void {
  const { socket } = req;
  const cut = setTimeout(() => socket.destroy(), UNREAD_BODY_LINGER_MS);
  cut.unref();
  const keep = () => clearTimeout(cut);
  req.once('end', keep);
  socket.once('close', keep);
}
