import { randomUUID } from 'node:crypto';
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
      const entry = (await readAll(file))[secretPath];
      if (entry === undefined || entry === null) return undefined;
      if (typeof entry !== 'object' || Array.isArray(entry)) throw new SecretStoreError('secret is not a key/value object');
      return Object.fromEntries(
        Object.entries(entry as Record<string, unknown>).filter(([, v]) => typeof v === 'string'),
      ) as Record<string, string>;
    },
    async write(secretPath, data) {
      const all = await readAll(file);
      all[secretPath] = data;
      // Written aside and renamed: a reader sees the old file or the new one, never half of one.
      // A name of its own per write: two writers (two service instances of one process) never share one.
      const aside = `${file}.${process.pid}.${randomUUID()}.tmp`;
      try {
        await fs.mkdir(path.dirname(file), { recursive: true });
        await fs.writeFile(aside, JSON.stringify(all, null, 2), { mode: 0o600 });
        await fs.rename(aside, file);
      } catch {
        throw new SecretStoreError('secrets file unwritable');
      }
    },
  };
}

async function readAll(file: string): Promise<Record<string, unknown>> {
  let raw: string;
  try {
    raw = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new SecretStoreError('secrets file unreadable');
  }
  let all: unknown;
  try {
    all = JSON.parse(raw);
  } catch {
    throw new SecretStoreError('secrets file is not JSON');
  }
  if (typeof all !== 'object' || all === null || Array.isArray(all))
    throw new SecretStoreError('secrets file is not a JSON object');
  return all as Record<string, unknown>;
}
