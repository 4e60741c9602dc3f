import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileSecretStore } from '../../../subgraphs/ai/vault/file-secrets.js';
import { SecretStoreError } from '../../../subgraphs/ai/vault/secrets.js';
import { createVaultKvStore } from '../../../subgraphs/ai/vault/vault-kv.js';
import { closedPort, startFakeVault } from './support.js';

const TOKEN = 'hvs.TEST-TOKEN-91';

describe('Vault KV v2 store against a local server speaking the API', () => {
  let vault: Awaited<ReturnType<typeof startFakeVault>>;
  beforeAll(async () => {
    vault = await startFakeVault(
      TOKEN,
      { 'ai/providers/openai-compatible': { api_key: 'sk-1', org: 'o' }, 'with space/x': { v: '1' } },
      'kv',
    );
  });
  afterAll(async () => vault?.close());

  it('reads data.data of a secret with X-Vault-Token', async () => {
    const store = createVaultKvStore({ addr: vault.url, token: TOKEN, mount: 'kv' });
    expect(await store.read('ai/providers/openai-compatible')).toEqual({ api_key: 'sk-1', org: 'o' });
    expect(await store.read('with space/x')).toEqual({ v: '1' });
  });

  it('treats 404 as no secret', async () => {
    const store = createVaultKvStore({ addr: vault.url, token: TOKEN, mount: 'kv' });
    expect(await store.read('ai/providers/absent')).toBeUndefined();
  });

  it('fails on a refused token with an error that names only the status', async () => {
    const store = createVaultKvStore({ addr: vault.url, token: 'wrong-token-XYZ', mount: 'kv' });
    const error = await store.read('ai/providers/openai-compatible').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretStoreError);
    expect((error as SecretStoreError).message).toBe('vault answered HTTP 403');
    expect((error as SecretStoreError).message).not.toContain('wrong-token-XYZ');
  });

  it('fails when the vault is unreachable, and refuses path traversal', async () => {
    const store = createVaultKvStore({
      addr: `http://127.0.0.1:${await closedPort()}`,
      token: TOKEN,
      mount: 'kv',
      timeoutMs: 1000,
    });
    await expect(store.read('a/b')).rejects.toThrow('vault unreachable');
    await expect(createVaultKvStore({ addr: vault.url, token: TOKEN, mount: 'kv' }).read('../sys/seal')).rejects.toThrow(
      'invalid secret path',
    );
  });
});

describe('file secret store (embedded mode)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'vault-file-'));
  });
  afterAll(async () => fs.rm(dir, { recursive: true, force: true }));

  it('reads DATA_DIR/vault/secrets.json, and a missing file means no secrets', async () => {
    const store = createFileSecretStore(dir);
    expect(await store.read('ai/providers/openai-compatible')).toBeUndefined();
    await fs.mkdir(path.join(dir, 'vault'));
    await fs.writeFile(
      path.join(dir, 'vault', 'secrets.json'),
      JSON.stringify({ 'ai/providers/openai-compatible': { api_key: 'sk-file', n: 3 } }),
    );
    expect(await store.read('ai/providers/openai-compatible')).toEqual({ api_key: 'sk-file' });
    await fs.writeFile(path.join(dir, 'vault', 'secrets.json'), '{not json');
    await expect(store.read('x')).rejects.toThrow('secrets file is not JSON');
  });
});
