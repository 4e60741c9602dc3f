import type { Db } from '../../platform/db/database.js';
import type { AiServices } from './services.js';

export interface AiHealthReport {
  status: 'ok' | 'degraded' | 'down';
  service: 'ai';
  dependencies: {
    database: { status: 'up' | 'down' };
    quota: { status: 'up' | 'degraded'; store: string; fallbackReplicas?: number; detail?: string };
    vault: { status: 'up' | 'down' | 'unknown'; kind: string; lastCheckedAt?: string; detail?: string };
    providers: Array<{ name: string; residencies: readonly string[]; circuit: 'closed' | 'open' | 'half_open' }>;
  };
  checkedInMs: number;
}

/**
 * The phase-0 health endpoint. 200 while the subgraph can serve (its database answers); Redis,
 * vault and provider circuits are reported, not required: each has a degraded mode. The vault is
 * not called here (its state is that of the last real read), so health checks cost it nothing.
 */
export async function aiHealth(db: Db, services: AiServices): Promise<{ httpStatus: number; report: AiHealthReport }> {
  const started = services.clock.now().getTime();
  const [database, quota] = await Promise.all([
    db.$queryRawUnsafe('SELECT 1').then(
      () => ({ status: 'up' as const }),
      () => ({ status: 'down' as const }),
    ),
    services.quota.health(),
  ]);
  const vault = services.secrets.status();
  const providers = [...services.registry.providers.values()].map((p) => ({
    name: p.name,
    residencies: p.residencies,
    circuit: services.breakers.state(p.name),
  }));
  const degraded = quota.status !== 'up' || vault.status === 'down' || providers.some((p) => p.circuit !== 'closed');
  const status = database.status === 'down' ? 'down' : degraded ? 'degraded' : 'ok';
  return {
    httpStatus: database.status === 'up' ? 200 : 503,
    report: {
      status,
      service: 'ai',
      dependencies: { database, quota, vault: { ...vault }, providers },
      checkedInMs: services.clock.now().getTime() - started,
    },
  };
}
