import type { DevKeyPair } from '../../platform/auth/dev-keys.js';

/**
 * The variables of a one-process system started inside the test process (`startSystem`): every
 * port chosen by the OS, the test's data folder and key pair, logs off; `env` on top.
 */
export function inProcessSystemEnv(dataDir: string, keys: DevKeyPair, env: Record<string, string> = {}): Record<string, string> {
  return {
    HOST: '127.0.0.1',
    PORT: '0',
    CATALOG_PORT: '0',
    AI_PORT: '0',
    DATA_DIR: dataDir,
    AUTH_PUBLIC_KEY: JSON.stringify(keys.publicJwk),
    LOG_LEVEL: 'silent',
    ...env,
  };
}
