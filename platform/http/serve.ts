import fs from 'node:fs';
import http from 'node:http';
import type { ConnectionLimits, PlatformConfig } from '../config/config.js';
import { AppError } from '../errors/errors.js';
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
   * answers, and no idle keep-alive connection is left to race the listener's close.
   */
  closeConnectionsAfterReply(): void;
  /**
   * Stops taking requests and waits for those in flight: the listener closes, idle keep-alive
   * connections are dropped, every response still to be written says `Connection: close`, and a
   * request that still arrives on an open connection gets 503. Resolves when the last response has
   * been written and the server has closed. After `forceAfterMs` the remaining connections are cut.
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
  const state: ServeState = { active: new Set(), draining: false, closingConnections: false, onIdle: undefined };

  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const exchange = newExchange(req, res);
    if (state.draining) return refuseWhileDraining(exchange);
    track(server, state, res);
    void answer(exchange, handler, state, logger);
  });

  return {
    inFlight: () => state.active.size,
    get draining() {
      return state.draining;
    },
    // Idle keep-alive connections stay open here: closing one races a request the balancer is
    // sending on it. The balancer stops sending once /readyz says 503; the drain closes them after.
    closeConnectionsAfterReply: () => {
      state.closingConnections = true;
    },
    drain: (forceAfterMs = 20_000) => drainServer(server, state, logger, forceAfterMs),
  };
}

/** What serve() keeps of its requests: those in flight, and where the shutdown stands. */
interface ServeState {
  active: Set<http.ServerResponse>;
  draining: boolean;
  closingConnections: boolean;
  /** Resolves the drain's wait once the last request in flight has closed. */
  onIdle: (() => void) | undefined;
}

/** A request that arrives on an open connection while the server drains: 503, go elsewhere. */
function refuseWhileDraining(exchange: Exchange): void {
  const refusal = new AppError('service.unavailable', 'The server is shutting down; retry on another replica', {
    headers: { 'retry-after': '1', connection: 'close' },
  });
  const format = exchange.url.pathname === '/graphql' ? 'graphql' : 'problem';
  write(exchange.res, errorReply(refusal, format, undefined, exchange.req.headers.accept));
}

/** Counts a request in flight until its response closes; the last one lets a drain go on. */
function track(server: http.Server, state: ServeState, res: http.ServerResponse): void {
  state.active.add(res);
  res.once('close', () => {
    state.active.delete(res);
    if (!state.draining) return;
    server.closeIdleConnections();
    if (state.active.size === 0) state.onIdle?.();
  });
}

/** Runs the pipeline and writes its reply whole. */
async function answer(exchange: Exchange, handler: Handler, state: ServeState, logger: Logger): Promise<void> {
  try {
    const reply = await handler(exchange);
    const closing: Record<string, string> = state.closingConnections ? { connection: 'close' } : {};
    write(exchange.res, { ...reply, headers: { ...exchange.replyHeaders, ...reply.headers, ...closing } });
  } catch (error) {
    // The pipeline renders every error it knows; reaching here is a bug in a stage.
    logger.error({ err: error }, 'request pipeline failed');
    write(exchange.res, { ...errorReply(error, 'problem', logger), headers: { ...exchange.replyHeaders } });
  }
}

/** The drain: see ServedServer.drain. */
async function drainServer(server: http.Server, state: ServeState, logger: Logger, forceAfterMs: number): Promise<void> {
  state.draining = true;
  // Only the last response of each connection says `Connection: close`: one marked earlier would
  // end the socket under a pipelined request already accepted behind it.
  const lastOnSocket = new Map<unknown, http.ServerResponse>();
  for (const res of state.active) lastOnSocket.set(res.req.socket, res);
  for (const res of lastOnSocket.values()) if (!res.headersSent) res.setHeader('connection', 'close');
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const idle = state.active.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => (state.onIdle = resolve));
  const force = setTimeout(() => {
    logger.warn({ inFlight: state.active.size }, 'drain bound reached; closing remaining connections');
    server.closeAllConnections();
  }, forceAfterMs);
  force.unref();
  try {
    await idle;
    server.closeIdleConnections();
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
