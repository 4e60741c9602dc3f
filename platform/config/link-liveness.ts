/**
 * How every long-lived connection notices a peer that stopped answering while the socket stays
 * open (a frozen or partitioned NATS node, a database behind a dead NAT entry), and how long
 * start-up waits for a service. One place, so the bounds are read together; documented in
 * docs/reliability.md, "Half-open links". The goal: a half-open link is noticed, and the client
 * has moved to a healthy peer, within LINK_DEADLINE_MS.
 */
export const LINK_DEADLINE_MS = 30_000;

export const NATS_LIVENESS = {
  /**
   * The client pings the server this often, and treats the link as stale once `maxPingOut` pings
   * are unanswered: a frozen node is left (maxPingOut + 1) × interval = 9 s after its last answer,
   * then the client reconnects to another server of the cluster (the default is 2 min × 2).
   */
  pingIntervalMs: 3_000,
  maxPingOut: 2,
  /** Between reconnect attempts to the same server (the client tries the others first). */
  reconnectTimeWaitMs: 500,
  /**
   * The server sends a pull consumer an idle heartbeat this often while its pull waits; two
   * missed ones end the pull and it is made again (on the new connection): 2 × 5 s = 10 s.
   */
  consumerIdleHeartbeatMs: 5_000,
  /**
   * How long one pull request stays open on the server. A pull made through a server that then
   * freezes keeps attracting messages until it expires (they come back after the consumer's ack
   * wait, CONSUMER_ACK_WAIT_SECONDS: the spec's 30 s, 15 s in the half-open test); the client makes its pulls again at once on reconnect.
   */
  pullExpiresMs: 10_000,
  /**
   * A JetStream publish or API request unanswered this long fails (the relay's batch then waits);
   * also the bound on opening a connection, so a reconnect that meets the frozen server first
   * moves on to the next after this long.
   */
  requestTimeoutMs: 5_000,
} as const;

export const POSTGRES_LIVENESS = {
  /**
   * TCP keepalive on every pooled and LISTEN connection: the first probe after 10 s idle, then
   * libuv's 10 probes 1 s apart (libuv ≥ 1.35), so an idle connection to a vanished server is
   * closed after about 20 s instead of the kernel's two hours.
   */
  keepAliveInitialDelayMs: 10_000,
  /** A new connection that has not completed its start-up in this long fails (pool and LISTEN). */
  connectionTimeoutMs: 5_000,
  /**
   * Server side: a statement running longer than this is cancelled by Postgres (SQLSTATE 57014).
   * Nothing the parts run in a request or a batch comes near it; migrations use their own
   * connections and are not bound by it.
   */
  statementTimeoutMs: 20_000,
  /**
   * Client side: no answer to a statement in this long fails it and the connection is dropped,
   * whatever the socket says: a half-open link during a query (keepalive probes only run on an
   * idle socket). Longer than statementTimeoutMs, so a healthy server's own timeout answers first.
   */
  queryTimeoutMs: 25_000,
} as const;

/**
 * The node-postgres settings every connection of the parts takes (the Prisma pool and the outbox's
 * LISTEN connection): a dead or half-open link fails within seconds instead of hanging; the
 * failure is answered 503 `dependency.unavailable` (platform/db/unreachable.ts) and the pool
 * opens a fresh connection.
 */
export const POSTGRES_LINK = {
  keepAlive: true,
  keepAliveInitialDelayMillis: POSTGRES_LIVENESS.keepAliveInitialDelayMs,
  connectionTimeoutMillis: POSTGRES_LIVENESS.connectionTimeoutMs,
  statement_timeout: POSTGRES_LIVENESS.statementTimeoutMs,
  query_timeout: POSTGRES_LIVENESS.queryTimeoutMs,
} as const;

export const REDIS_LIVENESS = {
  /** TCP keepalive's first probe after this long idle (then 10 probes 1 s apart, as above). */
  keepAliveMs: 10_000,
  /** A connection that has not become ready in this long is dropped and retried. */
  connectTimeoutMs: 2_000,
  /** A command unanswered this long fails; the caller degrades (quota, idempotency: docs/reliability.md). */
  commandTimeoutMs: 2_000,
  /**
   * ioredis has no liveness check of its own, and a frozen peer's kernel keeps acknowledging, so
   * neither keepalive nor failing commands ever close the link. Each connection sends a PING this
   * often while it is ready; `maxPingOut` consecutive PINGs unanswered within commandTimeoutMs
   * replace the connection (ioredis ends the socket, destroys it after its disconnectTimeout of
   * 2 s, and reconnects): a frozen link is left at most maxPingOut × pingIntervalMs +
   * commandTimeoutMs + 2 s = 10 s after its last answer, idle or busy.
   */
  pingIntervalMs: 3_000,
  maxPingOut: 2,
} as const;

export const STARTUP_RETRY = {
  /**
   * At start-up a NATS cluster may be electing a leader, or one of the listed servers may be down:
   * a part keeps trying the whole list (connection and JetStream API) for this long before it
   * exits naming NATS_URL. Measured: a worker started 2 s after a node was killed found JetStream
   * answering again within 15 s.
   */
  natsMs: 30_000,
  /** The first wait between attempts; it doubles up to maxDelayMs. */
  firstDelayMs: 250,
  maxDelayMs: 4_000,
} as const;
