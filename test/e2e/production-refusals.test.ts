import { beforeAll, describe, expect, it } from 'vitest';
import { spawnEntry } from '../support/entry-process.js';

/**
 * Issue #32: with NODE_ENV=production every command the image runs refuses each development
 * fallback in one line naming the variable, exit 2, before it touches a database or the filesystem.
 * Each command is spawned once per distinct refusal, a few at a time (processes, not CPU time, are
 * what a 2-core machine runs out of), through the image's own entry (processes/run-part.cli.ts).
 */

/** Every real service configured; nothing is ever reached, since each case is refused at start. */
const REAL = {
  NODE_ENV: 'production',
  DATABASE_URL: 'postgresql://app@127.0.0.1:1/catalog',
  AUTH_JWKS_URL: 'https://idp.example.org/jwks.json',
  NATS_URL: 'nats://127.0.0.1:1',
  REDIS_URL: 'redis://127.0.0.1:1',
  OPENAI_BASE_URL: 'https://llm.example.org/v1',
  // Nothing may be written: a directory that cannot exist stands for a read-only root.
  DATA_DIR: '/proc/self/no-such-dir/catalog-ai',
};

interface Case {
  name: string;
  command: string;
  /** What replaces REAL's values (undefined: unset). */
  env: Record<string, string | undefined>;
  /** What the one line must start with. */
  line: string;
}

const DATABASE = 'Invalid configuration: DATABASE_URL must be set when NODE_ENV=production';
const KEY = 'Invalid configuration: AUTH_JWKS_URL or AUTH_PUBLIC_KEY must be set when NODE_ENV=production';
const NATS = 'Invalid configuration: NATS_URL must be set when NODE_ENV=production';
const REDIS = 'Invalid configuration: REDIS_URL must be set when NODE_ENV=production';
const CORS = 'Invalid configuration: CORS_ORIGINS is * and NODE_ENV=production';
const PROVIDER =
  'Invalid configuration: OPENAI_BASE_URL, AZURE_OPENAI_ENDPOINT, BEDROCK_REGION or ONPREM_BASE_URL must be set when NODE_ENV=production';

const unset = (variable: string) => ({ [variable]: undefined });
const NO_KEY = unset('AUTH_JWKS_URL');
const CASES: Case[] = [
  ...['gateway', 'catalog', 'ai', 'worker', 'all'].flatMap((command) => [
    { name: 'DATABASE_URL unset', command, env: unset('DATABASE_URL'), line: DATABASE },
    { name: 'no verification key', command, env: NO_KEY, line: KEY },
  ]),
  ...['catalog', 'worker', 'all'].map((command) => ({ name: 'NATS_URL unset', command, env: unset('NATS_URL'), line: NATS })),
  ...['ai', 'all'].flatMap((command) => [
    { name: 'REDIS_URL unset', command, env: unset('REDIS_URL'), line: REDIS },
    { name: 'no model provider', command, env: unset('OPENAI_BASE_URL'), line: PROVIDER },
  ]),
  ...['gateway', 'all'].map((command) => ({ name: 'CORS_ORIGINS=*', command, env: { CORS_ORIGINS: '*' }, line: CORS })),
  { name: 'DATABASE_URL unset', command: 'migrate', env: unset('DATABASE_URL'), line: DATABASE },
  { name: 'DATABASE_URL empty', command: 'migrate', env: { DATABASE_URL: '' }, line: DATABASE },
  { name: 'DATABASE_URL blank', command: 'schema-ready', env: { DATABASE_URL: ' ' }, line: DATABASE },
  { name: 'DATABASE_URL unset', command: 'replay-archive', env: unset('DATABASE_URL'), line: DATABASE },
];

/** The commands the image runs go through its entry; the replay CLI is run as itself. */
function spawnCommand(command: string, env: Record<string, string | undefined>) {
  if (command === 'replay-archive') {
    return spawnEntry('events/archive/replay-archive.cli.ts', env, [
      '--since',
      '2026-01-01T00:00:00Z',
      '--until',
      '2026-02-01T00:00:00Z',
    ]);
  }
  return spawnEntry('processes/run-part.cli.ts', env, [command]);
}

/** A command that starts instead of refusing is stopped after this, and its case fails. */
const STARTED_INSTEAD_MS = 60_000;

async function run(entry: Case): Promise<{ code: number | null; output: string }> {
  const child = spawnCommand(entry.command, { ...REAL, ...entry.env });
  const bound = setTimeout(() => void child.kill('SIGKILL'), STARTED_INSTEAD_MS);
  const code = await child.exited;
  clearTimeout(bound);
  return { code, output: child.output() };
}

/** Runs every case, at most `limit` processes at a time. */
async function runAll(cases: Case[], limit: number): Promise<Map<Case, { code: number | null; output: string }>> {
  const results = new Map<Case, { code: number | null; output: string }>();
  const queue = [...cases];
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) results.set(next, await run(next));
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

describe('NODE_ENV=production: every image command refuses every development fallback', () => {
  let results: Map<Case, { code: number | null; output: string }>;

  beforeAll(async () => {
    results = await runAll(CASES, 3);
  }, 300_000);

  it.each(CASES.map((entry) => [entry.command, entry.name, entry] as const))('%s, %s: one line, exit 2', (_c, _n, entry) => {
    const { code, output } = results.get(entry)!;
    expect(code, output).toBe(2);
    const lines = output.trimEnd().split('\n');
    expect(lines, output).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^${entry.line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    expect(output).not.toMatch(/^\s+at /m);
  });
});
