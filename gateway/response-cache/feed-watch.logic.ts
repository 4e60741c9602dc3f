/**
 * Whether the response cache may serve while it follows the catalog's events. Invalidation is
 * what keeps a cached answer true; without the feed a change made elsewhere would be served until
 * the TTL (54–60 s measured with both gateways cut from NATS). So a feed lost for longer than the
 * grace stops the cache (reads go to the subgraphs, nothing is stored) until it comes back; the
 * grace rides out a reconnect without emptying the cache.
 */
export interface FeedWatch {
  /** When the feed was lost; undefined while it is followed. */
  lostSince?: number;
}

export type FeedStatus =
  | { state: 'following' }
  | { state: 'lost'; lostForMs: number; /** Still inside the grace: the cache serves. */ serving: boolean };

export function feedStatus(watch: FeedWatch, now: number, graceMs: number): FeedStatus {
  if (watch.lostSince === undefined) return { state: 'following' };
  const lostForMs = Math.max(0, now - watch.lostSince);
  return { state: 'lost', lostForMs, serving: lostForMs < graceMs };
}

export function cacheServes(status: FeedStatus): boolean {
  return status.state === 'following' || status.serving;
}

/** The /readyz line: reported, never required (the gateway answers without its cache). */
export function feedReadiness(status: FeedStatus): { status: 'up' | 'degraded'; detail?: string } {
  if (status.state === 'following') return { status: 'up' };
  const seconds = (status.lostForMs / 1000).toFixed(1);
  return {
    status: 'degraded',
    detail: status.serving
      ? `catalog event feed lost ${seconds} s ago; cached answers still served within the grace`
      : `catalog event feed lost ${seconds} s ago; cached answers not served until it returns`,
  };
}
