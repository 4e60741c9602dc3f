import { describe, expect, it } from 'vitest';
import {
  IMAGE_COMMANDS,
  mockProviderServes,
  productionCheck,
  refusalLine,
  type FallbackCode,
  type ImageCommand,
  type ProductionFacts,
} from '../../../platform/config/production.logic.js';

/** Every real service configured: no command takes a fallback. */
const REAL: ProductionFacts = {
  production: true,
  databaseUrl: 'postgresql://app@db:5432/catalog',
  auth: { jwksUrl: 'https://idp.example.org/jwks.json' },
  natsUrl: 'nats://nats:4222',
  redisUrl: 'redis://redis:6379',
  corsOrigins: ['https://app.example.org'],
  corsAllowAnyOrigin: false,
  realProviders: ['openai-compatible'],
  allowMockProvider: false,
};

/** Each fallback, taken: the facts of a configuration that would fall back to it. */
const TAKE: Record<FallbackCode, (facts: ProductionFacts) => ProductionFacts> = {
  'production.embedded_database': (facts) => ({ ...facts, databaseUrl: undefined }),
  'production.development_signing_key': (facts) => ({ ...facts, auth: {} }),
  'production.in_process_bus': (facts) => ({ ...facts, natsUrl: undefined }),
  'production.in_memory_quotas': (facts) => ({ ...facts, redisUrl: undefined }),
  'production.cors_any_origin': (facts) => ({ ...facts, corsOrigins: '*' }),
  'production.mock_provider': (facts) => ({ ...facts, realProviders: [] }),
};
const FALLBACKS = Object.keys(TAKE) as FallbackCode[];

/** The variable each refusal names. */
const VARIABLE: Record<FallbackCode, string> = {
  'production.embedded_database': 'DATABASE_URL',
  'production.development_signing_key': 'AUTH_JWKS_URL or AUTH_PUBLIC_KEY',
  'production.in_process_bus': 'NATS_URL',
  'production.in_memory_quotas': 'REDIS_URL',
  'production.cors_any_origin': 'CORS_ORIGINS',
  'production.mock_provider': 'OPENAI_BASE_URL, AZURE_OPENAI_ENDPOINT, BEDROCK_REGION or ONPREM_BASE_URL',
};

/**
 * Which command would take which fallback (issue #32): written out here, not read from the table,
 * so a row that loses a command fails. The gateway keeps Idempotency-Key records in the database
 * without Redis, so REDIS_URL is not its fallback; the replay CLI requires NATS_URL in any mode.
 */
const REFUSED: Record<ImageCommand, readonly FallbackCode[]> = {
  gateway: ['production.embedded_database', 'production.development_signing_key', 'production.cors_any_origin'],
  catalog: ['production.embedded_database', 'production.development_signing_key', 'production.in_process_bus'],
  ai: [
    'production.embedded_database',
    'production.development_signing_key',
    'production.in_memory_quotas',
    'production.mock_provider',
  ],
  worker: ['production.embedded_database', 'production.development_signing_key', 'production.in_process_bus'],
  all: FALLBACKS,
  migrate: ['production.embedded_database'],
  'schema-ready': ['production.embedded_database'],
  'replay-archive': ['production.embedded_database'],
};

const EVERY_PAIR = IMAGE_COMMANDS.flatMap((command) => FALLBACKS.map((fallback) => [command, fallback] as const));

describe('production refuses every development fallback (every command × every fallback)', () => {
  it.each(EVERY_PAIR)('%s with %s taken', (command, fallback) => {
    const { refusals, warnings } = productionCheck(command, TAKE[fallback](REAL));
    const expected = REFUSED[command].includes(fallback) ? [{ code: fallback, variable: VARIABLE[fallback] }] : [];
    expect(refusals.map(({ code, variable }) => ({ code, variable }))).toEqual(expected);
    expect(warnings).toEqual([]);
  });

  it.each(IMAGE_COMMANDS)('%s: refuses nothing with every real service configured', (command) => {
    expect(productionCheck(command, REAL)).toEqual({ refusals: [], warnings: [] });
  });

  it.each(IMAGE_COMMANDS)('%s: refuses nothing outside production, whatever is missing', (command) => {
    const everyFallback = FALLBACKS.reduce((facts, fallback) => TAKE[fallback](facts), REAL);
    expect(productionCheck(command, { ...everyFallback, production: false })).toEqual({ refusals: [], warnings: [] });
  });

  it.each(IMAGE_COMMANDS)('%s: with every fallback taken, names each of its own in one line', (command) => {
    const everyFallback = FALLBACKS.reduce((facts, fallback) => TAKE[fallback](facts), REAL);
    const { refusals } = productionCheck(command, everyFallback);
    expect(refusals.map((refusal) => refusal.code)).toEqual(REFUSED[command]);
    const line = refusalLine(refusals);
    expect(line.variable).toBe('DATABASE_URL');
    expect(line.problem).not.toContain('\n');
    for (const code of REFUSED[command].slice(1)) expect(line.problem).toContain(VARIABLE[code]);
  });
});

describe('explicit opt-ins turn a refusal into a warning', () => {
  it.each(['ai', 'all'] as const)('%s: AI_ALLOW_MOCK_PROVIDER lets the mock provider serve, with a warning', (command) => {
    const facts = { ...TAKE['production.mock_provider'](REAL), allowMockProvider: true };
    const { refusals, warnings } = productionCheck(command, facts);
    expect(refusals).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining('AI_ALLOW_MOCK_PROVIDER=true')]);
  });

  it.each(['gateway', 'all'] as const)('%s: CORS_ALLOW_ANY_ORIGIN lets CORS_ORIGINS=* through, with a warning', (command) => {
    const facts = { ...TAKE['production.cors_any_origin'](REAL), corsAllowAnyOrigin: true };
    const { refusals, warnings } = productionCheck(command, facts);
    expect(refusals).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining('CORS_ALLOW_ANY_ORIGIN=true')]);
  });

  it('an opt-in with nothing to allow warns about nothing', () => {
    expect(productionCheck('all', { ...REAL, allowMockProvider: true, corsAllowAnyOrigin: true }).warnings).toEqual([]);
  });

  it('no opt-in reaches past its own fallback', () => {
    const facts = { ...TAKE['production.embedded_database'](REAL), allowMockProvider: true, corsAllowAnyOrigin: true };
    expect(productionCheck('all', facts).refusals.map((refusal) => refusal.code)).toEqual(['production.embedded_database']);
  });
});

describe('the mock provider serves', () => {
  it.each([
    [false, false, true],
    [false, true, true],
    [true, false, false],
    [true, true, true],
  ])('production %s, AI_ALLOW_MOCK_PROVIDER %s: %s', (production, allowMockProvider, serves) => {
    expect(mockProviderServes({ production, allowMockProvider })).toBe(serves);
  });
});
