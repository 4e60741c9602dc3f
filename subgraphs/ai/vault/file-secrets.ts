import fs from 'node:fs/promises';
import path from 'node:path';
import { SecretStoreError, type SecretStore } from './secrets.js';

/**
 * Embedded mode's vault: `DATA_DIR/vault/secrets.json`, an object from secret path to key/value
 * pairs, e.g. `{"ai/providers/openai-compatible": {"api_key": "..."}}`. A missing file means no
 * secrets (the mock provider needs none).
 */
export function createFileSecretStore(dataDir: string): SecretStore {
  const file = path.join(dataDir, 'vault', 'secrets.json');
  return {
    kind: 'file',
    async read(secretPath) {
      let raw: string;
      try {
        raw = await fs.readFile(file, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw new SecretStoreError('secrets file unreadable');
      }
      let all: unknown;
      try {
        all = JSON.parse(raw);
      } catch {
        throw new SecretStoreError('secrets file is not JSON');
      }
      const entry = (all as Record<string, unknown>)?.[secretPath];
      if (entry === undefined || entry === null) return undefined;
      if (typeof entry !== 'object' || Array.isArray(entry)) throw new SecretStoreError('secret is not a key/value object');
      return Object.fromEntries(
        Object.entries(entry as Record<string, unknown>).filter(([, v]) => typeof v === 'string'),
      ) as Record<string, string>;
    },
  };
}
