import fs from 'node:fs/promises';
import { generateEd25519, type DevKeyPair } from '../../platform/auth/dev-keys.js';
import { loadSystemConfig } from '../../processes/config.js';
import { startSystem, type System } from '../../processes/system.js';
import { processDataDir } from './child-env.js';
import { createTestDatabase } from './database.js';

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

export interface TestSystem {
  system: System;
  keys: DevKeyPair;
  /** Stops the system, closes its database and removes its data folder. */
  stop(): Promise<void>;
}

/**
 * The one-process system (`startSystem`) in the test process, on a fresh test database (PGlite, or
 * DATABASE_URL's server), a fresh key pair and data folder; no demo catalog; `env` on top.
 */
export async function startTestSystem(name: string, env: Record<string, string> = {}): Promise<TestSystem> {
  const db = await createTestDatabase();
  const dataDir = processDataDir(`${name}-`);
  const keys = await generateEd25519();
  const stop = async (system?: System) => {
    await system?.stop();
    await db.close();
    await fs.rm(dataDir, { recursive: true, force: true });
  };
  try {
    const config = loadSystemConfig(
      inProcessSystemEnv(dataDir, keys, {
        DATABASE_URL: db.url,
        DB_POOL_SIZE: '4',
        DEMO_DATA: 'false',
        ...env,
      }),
    );
    const system = await startSystem(config);
    return { system, keys, stop: () => stop(system) };
  } catch (error) {
    await stop();
    throw error;
  }
}
