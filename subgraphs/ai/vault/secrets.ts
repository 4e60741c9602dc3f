import type { Clock } from '../../../platform/clock.js';

/**
 * Where provider keys come from. Values are returned to the adapter that sends them and to
 * nothing else: no API returns them, no log line or error message carries them.
 */
export interface SecretStore {
  readonly kind: 'vault' | 'file';
  /** The key/value pairs stored at `path`, or undefined when there is no secret there. */
  read(path: string): Promise<Record<string, string> | undefined>;
  /**
   * Replaces the secret at `path` (a new version in Vault KV v2). Only the gateway's own secrets
   * are written, never a provider's: the receipt signing keys (provenance/receipts/receipt-keys.ts).
   */
  write?(path: string, data: Record<string, string>): Promise<void>;
}

/** A store failure that names no secret value, path content or token. */
export class SecretStoreError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'SecretStoreError';
  }
}

export interface SecretCacheStatus {
  kind: SecretStore['kind'];
  status: 'up' | 'down' | 'unknown';
  /** When the last read from the store succeeded or failed (ISO), for the health report. */
  lastCheckedAt?: string;
  detail?: string;
}

export interface CachedSecrets {
  read(path: string): Promise<Record<string, string> | undefined>;
  /** One field of a secret, e.g. api_key. */
  field(path: string, name: string): Promise<string | undefined>;
  status(): SecretCacheStatus;
  /** Forgets a cached path, so this replica reads a secret it has just written at once. */
  invalidate(path: string): void;
}

/**
 * Caches reads for a short time so a provider call does not wait on the vault, while a rotated key
 * is picked up within `ttlMs`. Concurrent misses share one read. Failures are not cached, but a
 * value that is still in the cache keeps serving for up to one more TTL while the vault is down.
 */
export function cacheSecrets(store: SecretStore, options: { ttlMs: number; clock: Clock }): CachedSecrets {
  const cache = new Map<string, { value: Record<string, string> | undefined; fetchedAt: number }>();
  const inFlight = new Map<string, Promise<Record<string, string> | undefined>>();
  let status: SecretCacheStatus = { kind: store.kind, status: 'unknown' };
  const nowMs = () => options.clock.now().getTime();

  const load = (path: string) => {
    const running = inFlight.get(path);
    if (running) return running;
    const promise = store
      .read(path)
      .then((value) => {
        cache.set(path, { value, fetchedAt: nowMs() });
        status = { kind: store.kind, status: 'up', lastCheckedAt: options.clock.now().toISOString() };
        return value;
      })
      .catch((error: unknown) => {
        status = {
          kind: store.kind,
          status: 'down',
          lastCheckedAt: options.clock.now().toISOString(),
          detail: error instanceof SecretStoreError ? error.message : 'secret store read failed',
        };
        throw error;
      })
      .finally(() => inFlight.delete(path));
    inFlight.set(path, promise);
    return promise;
  };

  const read = async (path: string) => {
    const hit = cache.get(path);
    const age = hit ? nowMs() - hit.fetchedAt : Number.POSITIVE_INFINITY;
    if (hit && age < options.ttlMs) return hit.value;
    try {
      return await load(path);
    } catch (error) {
      if (hit && age < options.ttlMs * 2) return hit.value;
      throw error;
    }
  };

  return {
    read,
    async field(path, name) {
      return (await read(path))?.[name];
    },
    status: () => status,
    invalidate: (path) => void cache.delete(path),
  };
}
