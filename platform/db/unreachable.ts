/** Prisma's codes for a database it cannot reach (P1xxx) or no connection to be had (P2024). */
const UNREACHABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
/** SQLSTATEs of a server that is down, restarting or refusing connections: 08xxx, 57P01-03, 53300. */
const UNREACHABLE_SQLSTATE = /^(08|57P0[123]$|53300$)/;
/** What Prisma's driver adapters call a database they cannot talk to. */
const UNREACHABLE_ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'SocketTimeout', 'TooManyConnections', 'ConnectionClosed']);

/**
 * Whether an error says the database cannot be reached (down, restarting, failing over, out of
 * connections), which says nothing about the request or message that met it: every one would
 * fail alike until the database is back.
 */
export function databaseUnreachable(error: unknown): boolean {
  const e = error as {
    code?: unknown;
    message?: unknown;
    meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; kind?: unknown } } };
  } | null;
  if (typeof e?.code === 'string' && UNREACHABLE_PRISMA_CODES.has(e.code)) return true;
  const cause = e?.meta?.driverAdapterError?.cause;
  if (typeof cause?.kind === 'string' && UNREACHABLE_ADAPTER_KINDS.has(cause.kind)) return true;
  if (typeof cause?.originalCode === 'string' && UNREACHABLE_SQLSTATE.test(cause.originalCode)) return true;
  return (
    typeof e?.message === 'string' && /ECONNREFUSED|ECONNRESET|Connection terminated|Can't reach database server/.test(e.message)
  );
}
