/**
 * One classification of "the database cannot be reached" for every door (GraphQL, REST, the
 * idempotency stages) and the event consumers: down, restarting, failing over, out of
 * connections, a session terminated under us (pg_terminate_backend, a failover) or a link that
 * stopped answering (the pool's timeouts, docs/operations.md "Connection liveness"). Such an
 * error says nothing about the request or message that met it: every one would fail alike until
 * the database is back, so requests answer 503 `dependency.unavailable` and consumers hold.
 */

/** Prisma's codes for a database it cannot reach (P1xxx) or no connection to be had (P2024). */
const UNREACHABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
/** SQLSTATEs of a server that is down, restarting or refusing connections: 08xxx, 57P01-03, 53300. */
const UNREACHABLE_SQLSTATE = /^(08|57P0[123]$|53300$)/;
/** What Prisma's driver adapters call a database they cannot talk to. */
const UNREACHABLE_ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'SocketTimeout', 'TooManyConnections', 'ConnectionClosed']);
/**
 * node-postgres' and Prisma's words for a connection that died or never came: refused, reset,
 * terminated (the server ended the session), not queryable (the pool's client saw its socket
 * fail), no answer within query_timeout or connectionTimeoutMillis, and an interactive
 * transaction whose connection went away under it.
 */
const UNREACHABLE_MESSAGE = new RegExp(
  [
    'ECONNREFUSED',
    'ECONNRESET',
    'Connection terminated',
    'terminating connection',
    "Can't reach database server",
    'is not queryable',
    'Query read timeout',
    'timeout exceeded when trying to connect',
    'Server has closed the connection',
  ].join('|'),
);

interface ErrorShape {
  code?: unknown;
  message?: unknown;
  meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; kind?: unknown } } };
  cause?: unknown;
}

/** The Postgres SQLSTATE behind an error: Prisma's driver-adapter error, or node-postgres' own. */
export function sqlStateOf(error: unknown): string | undefined {
  const e = error as ErrorShape | null;
  const adapter = e?.meta?.driverAdapterError?.cause?.originalCode;
  if (typeof adapter === 'string') return adapter;
  // Prisma's own codes (P1000-P3999) have the same shape; Postgres' P class is only P0xxx.
  return typeof e?.code === 'string' && /^(?!P[1-9])[0-9A-Z]{5}$/.test(e.code) ? e.code : undefined;
}

/** Whether `error` (or the error it wraps) says the database cannot be reached; see above. */
export function databaseUnreachable(error: unknown, depth = 0): boolean {
  const e = error as ErrorShape | null;
  if (typeof e?.code === 'string' && UNREACHABLE_PRISMA_CODES.has(e.code)) return true;
  const kind = e?.meta?.driverAdapterError?.cause?.kind;
  if (typeof kind === 'string' && UNREACHABLE_ADAPTER_KINDS.has(kind)) return true;
  const sqlState = sqlStateOf(error);
  if (sqlState && UNREACHABLE_SQLSTATE.test(sqlState)) return true;
  if (typeof e?.message === 'string' && UNREACHABLE_MESSAGE.test(e.message)) return true;
  return depth < 3 && e?.cause !== undefined && databaseUnreachable(e.cause, depth + 1);
}
