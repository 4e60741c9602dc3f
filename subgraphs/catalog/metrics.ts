import type { Db } from '../../platform/db/database.js';
import type { Metrics } from '../../platform/observability/metrics.js';
import { NOT_APPLIED_REASONS } from './gdpr/gdpr-request.logic.js';

const CACHE_MS = 15_000;

// The catalog's metrics; their names and labels are a contract (dashboards, docs/operations.md).
const GDPR_NOT_APPLIED = {
  name: 'catalog_gdpr_requests_not_applied',
  help: 'GDPR requests the catalog acknowledged without applying them (recorded in GdprRequestNotApplied), by reason.',
  labelNames: ['reason'],
} as const;
const PLAY_PACKAGES_HELD = {
  name: 'catalog_play_packages_held',
  help: 'Built play packages held because the catalog does not know their format yet.',
  labelNames: [],
} as const;

interface Counts {
  notApplied: Map<string, number>;
  held: number;
}

/**
 * Scrape-time gauges of what the catalog tolerated instead of dead-lettering (unknown enum
 * values): GDPR requests not applied, per reason (a closed set: every reason is reported, 0 when
 * none), and play packages held for an unknown format. Read from the tables the handlers write in
 * their transactions, so a retried delivery never counts twice and every replica reports the same
 * value (aggregate with max()); at most every 15 s per process. Returns the function that stops.
 */
export function feedCatalogMetrics(metrics: Metrics, db: Db, options: { cacheMs?: number } = {}): () => void {
  const cacheMs = options.cacheMs ?? CACHE_MS;
  let cached: { at: number; counts: Promise<Counts> } | undefined;
  const counts = () => {
    if (!cached || Date.now() - cached.at >= cacheMs) {
      const read = readCounts(db);
      cached = { at: Date.now(), counts: read };
      read.catch(() => (cached = undefined));
    }
    return cached.counts;
  };
  const removeNotApplied = metrics.feed(GDPR_NOT_APPLIED, async () => {
    const { notApplied } = await counts();
    return NOT_APPLIED_REASONS.map((reason) => ({ labels: { reason }, value: notApplied.get(reason) ?? 0 }));
  });
  const removeHeld = metrics.feed(PLAY_PACKAGES_HELD, async () => (await counts()).held);
  return () => {
    removeNotApplied();
    removeHeld();
  };
}

async function readCounts(db: Db): Promise<Counts> {
  const rows = await db.$queryRaw<Array<{ reason: string; n: number }>>`
    SELECT reason, count(*)::int AS n FROM "GdprRequestNotApplied" GROUP BY reason
    UNION ALL SELECT '', count(*)::int FROM "HeldPlayPackage"`;
  return {
    notApplied: new Map(rows.filter((row) => row.reason !== '').map((row) => [row.reason, row.n])),
    held: rows.find((row) => row.reason === '')?.n ?? 0,
  };
}
