import type { Redis } from 'ioredis';
import type { Db } from '../db/database.js';
import type { ReadinessReport } from '../http/probe-endpoints.js';

export type CheckResult = ReadinessReport['checks'][string];

/**
 * One named thing a part needs to serve, asked each time /readyz is. `required`: the part cannot
 * serve without it (down ⇒ not ready); otherwise the part has a degraded mode and only reports it.
 */
export interface ReadinessCheck {
  required: boolean;
  run(): Promise<Omit<CheckResult, 'required'>>;
}

/** No single check may hold /readyz longer than this: an orchestrator's probe has its own timeout. */
const CHECK_TIMEOUT_MS = 2_000;

/**
 * A part's /readyz from its checks: ready while no required check is down. A part that is
 * draining (SIGTERM received) reports not ready first, so the load balancer stops sending before
 * the listener closes.
 */
export function readinessOf(
  checks: Record<string, ReadinessCheck>,
  more: {
    /** Checks that report several names at once (the gateway's subgraph replicas). */
    groups?: ReadonlyArray<() => Promise<ReadinessReport['checks']>>;
    draining?: () => boolean;
  } = {},
): () => Promise<ReadinessReport> {
  return async () => {
    const [entries, groups] = await Promise.all([
      Promise.all(
        Object.entries(checks).map(
          async ([name, check]) => [name, { ...(await bounded(check)), required: check.required }] as const,
        ),
      ),
      Promise.all((more.groups ?? []).map((group) => group())),
    ]);
    const results: ReadinessReport['checks'] = Object.assign(Object.fromEntries(entries), ...groups);
    if (more.draining?.()) {
      results.shutdown = { status: 'down', required: true, detail: 'draining: shutting down, finishing requests in flight' };
    }
    return { ready: Object.values(results).every((c) => c.status !== 'down' || !c.required), checks: results };
  };
}

async function bounded(check: ReadinessCheck): Promise<Omit<CheckResult, 'required'>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Omit<CheckResult, 'required'>>((resolve) => {
    timer = setTimeout(() => resolve({ status: 'down', detail: `no answer within ${CHECK_TIMEOUT_MS} ms` }), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check.run(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The database answers a query. */
export function databaseCheck(db: Db, required = true): ReadinessCheck {
  return {
    required,
    async run() {
      try {
        await db.$queryRawUnsafe('SELECT 1');
        return { status: 'up' };
      } catch (error) {
        return { status: 'down', detail: `database unreachable: ${firstLine(error)}` };
      }
    },
  };
}

/**
 * A Redis connection answers PING. `whenDown` says what the part does without it: `down` when
 * the part cannot serve (required), `degraded` when it has a fallback (named in `detail`).
 */
export function redisCheck(redis: Redis, whenDown: { status: 'down' | 'degraded'; detail: string }): ReadinessCheck {
  return {
    required: whenDown.status === 'down',
    async run() {
      try {
        if (redis.status !== 'ready') throw new Error(`connection ${redis.status}`);
        await redis.ping();
        return { status: 'up' };
      } catch (error) {
        return { status: whenDown.status, detail: `redis unreachable (${firstLine(error)}): ${whenDown.detail}` };
      }
    },
  };
}

/** A check computed from state the part already holds (no I/O). */
export function stateCheck(required: boolean, run: () => Omit<CheckResult, 'required'>): ReadinessCheck {
  return { required, run: async () => run() };
}

function firstLine(error: unknown): string {
  return String((error as Error)?.message ?? error).split('\n')[0];
}
