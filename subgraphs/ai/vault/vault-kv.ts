import { SecretStoreError, type SecretStore } from './secrets.js';

export interface VaultKvOptions {
  addr: string;
  token: string;
  /** KV v2 mount, e.g. `secret`. */
  mount: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/**
 * HashiCorp Vault KV version 2 over its HTTP API: `GET /v1/<mount>/data/<path>` with
 * `X-Vault-Token`; the secret is `data.data`. A 404 (absent, or deleted/destroyed latest
 * version) is "no secret"; anything else non-2xx is an error that names only the status.
 */
export function createVaultKvStore(options: VaultKvOptions): SecretStore {
  const base = options.addr.replace(/\/$/, '');
  const mount = encodePath(options.mount);
  const doFetch = options.fetch ?? fetch;
  return {
    kind: 'vault',
    async read(path) {
      const url = `${base}/v1/${mount}/data/${encodePath(path)}`;
      let response: Response;
      try {
        response = await doFetch(url, {
          headers: { 'x-vault-token': options.token, accept: 'application/json' },
          signal: AbortSignal.timeout(options.timeoutMs ?? 3_000),
          redirect: 'error',
        });
      } catch {
        throw new SecretStoreError('vault unreachable');
      }
      if (response.status === 404) {
        await response.body?.cancel();
        return undefined;
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw new SecretStoreError(`vault answered HTTP ${response.status}`, response.status);
      }
      let body: unknown;
      try {
        body = await response.json();
      } catch {
        throw new SecretStoreError('vault answered with a body that is not JSON');
      }
      const data = (body as { data?: { data?: unknown } })?.data?.data;
      if (data === null || data === undefined) return undefined;
      if (typeof data !== 'object' || Array.isArray(data)) throw new SecretStoreError('vault secret is not a key/value object');
      return Object.fromEntries(
        Object.entries(data as Record<string, unknown>).filter(([, v]) => typeof v === 'string'),
      ) as Record<string, string>;
    },
    async write(path, data) {
      const url = `${base}/v1/${mount}/data/${encodePath(path)}`;
      let response: Response;
      try {
        response = await doFetch(url, {
          method: 'POST',
          headers: { 'x-vault-token': options.token, 'content-type': 'application/json' },
          body: JSON.stringify({ data }),
          signal: AbortSignal.timeout(options.timeoutMs ?? 3_000),
          redirect: 'error',
        });
      } catch {
        throw new SecretStoreError('vault unreachable');
      }
      await response.body?.cancel();
      if (!response.ok) throw new SecretStoreError(`vault answered HTTP ${response.status}`, response.status);
    },
  };
}

function encodePath(path: string): string {
  const segments = path.split('/').filter(Boolean);
  if (segments.length === 0 || segments.some((s) => s === '..' || s === '.')) throw new SecretStoreError('invalid secret path');
  return segments.map(encodeURIComponent).join('/');
}
