import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
/**
 * What a process under test (or under a bench) inherits. The runner's own service URLs, ports,
 * keys and exporters never leak into it: without an explicit value it runs on its embedded
 * defaults, never on the runner's shared database or broker by accident.
 */
export const ISOLATED_VARIABLES: readonly string[] = [
  'DATABASE_URL',
  'REDIS_URL',
  'NATS_URL',
  'AUTH_JWKS_URL',
  'AUTH_PUBLIC_KEY',
  'AUTH_ISSUER',
  'AUTH_AUDIENCE',
  'PORT',
  'CATALOG_PORT',
  'AI_PORT',
  'CATALOG_URL',
  'AI_URL',
  'DATA_DIR',
  'HOST',
  'METRICS_PORT',
  'OPENAI_BASE_URL',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_TRACES_EXPORTER',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_SERVICE_NAME',
];

/**
 * The runner's environment without the isolated variables, then `env` on top; a value of
 * undefined in `env` removes a variable.
 */
export function childEnv(env: Record<string, string | undefined> = {}): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !ISOLATED_VARIABLES.includes(name)) result[name] = value;
  }
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete result[name];
    else result[name] = value;
  }
  return result;
}

export { freePort } from '../../platform/free-port.js';

/**
 * A fresh DATA_DIR for a process under test, searchable by every account: without DATABASE_URL a
 * part runs the embedded Postgres there, which as root runs as the postgres account.
 */
export function processDataDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  return dir;
}
