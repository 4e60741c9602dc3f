import type { EventsSlice } from '../../events/config.js';
import type { PlatformConfig } from '../../platform/config/config.js';
import { envBool, envList, type Env } from '../../platform/config/env.js';

/** The catalog's own configuration slice (its port is in the shared server slice). */
export interface CatalogSlice {
  /**
   * Publish the demo catalog (README's tenant) through the bus at start. On by default only in the
   * fully embedded mode (no DATABASE_URL, no NATS_URL): never writes into a real database or
   * onto a shared broker unless asked with DEMO_DATA=true.
   */
  demoData: boolean;
  /** Retention classes under which a GDPR erasure may zero author ids. */
  gdprZeroingRetentionClasses: string[];
}

/** What the catalog subgraph reads: the shared platform slice, the events slice and its own. */
export type CatalogSubgraphConfig = PlatformConfig & EventsSlice & CatalogSlice;

export function loadCatalogSlice(env: Env, platform: Pick<PlatformConfig, 'databaseUrl' | 'natsUrl'>): CatalogSlice {
  return {
    demoData: envBool(env, 'DEMO_DATA', !platform.databaseUrl && !platform.natsUrl),
    gdprZeroingRetentionClasses: envList(env, 'GDPR_ZEROING_RETENTION_CLASSES', ['operational']),
  };
}
