import type { CorsOrigins } from './cors-origins.js';

/**
 * Every command the image runs (Dockerfile: `run-part <command>`), plus the replay CLI an operator
 * runs against the same database and broker.
 */
export const IMAGE_COMMANDS = ['gateway', 'catalog', 'ai', 'worker', 'all', 'migrate', 'schema-ready', 'replay-archive'] as const;
export type ImageCommand = (typeof IMAGE_COMMANDS)[number];

/** What a command's configuration says about the services it would otherwise fall back from. */
export interface ProductionFacts {
  production: boolean;
  databaseUrl?: string;
  auth: { jwksUrl?: string; publicKey?: string };
  natsUrl?: string;
  redisUrl?: string;
  /** CORS_ORIGINS as parsed, for the commands that serve browsers (the gateway's door). */
  corsOrigins?: CorsOrigins;
  /** CORS_ALLOW_ANY_ORIGIN: `CORS_ORIGINS=*` in production, knowingly. */
  corsAllowAnyOrigin?: boolean;
  /** The model providers configured besides the built-in mock. */
  realProviders?: readonly string[];
  /** AI_ALLOW_MOCK_PROVIDER: the mock provider's canned text may answer in production. */
  allowMockProvider?: boolean;
}

/** A development fallback production will not take: the variable to set, and what it would fall back to. */
export interface Refusal {
  /** Stable: tests and operators key on it. */
  code: FallbackCode;
  variable: string;
  /** The rest of the sentence after the variable's name. */
  problem: string;
}

export type FallbackCode =
  | 'production.embedded_database'
  | 'production.development_signing_key'
  | 'production.in_process_bus'
  | 'production.in_memory_quotas'
  | 'production.cors_any_origin'
  | 'production.mock_provider';

interface Fallback {
  code: FallbackCode;
  variable: string;
  /** The commands that would take this fallback. */
  commands: readonly ImageCommand[];
  /** Whether these facts would take it. */
  taken(facts: ProductionFacts): boolean;
  problem: string;
  /** What an explicit opt-in turns the refusal into: a warning logged at start. */
  optIn?: { allowed(facts: ProductionFacts): boolean; warning: string };
}

const SERVING: readonly ImageCommand[] = ['gateway', 'catalog', 'ai', 'worker', 'all'];

const mustBeSet = (fallback: string) =>
  `must be set when NODE_ENV=production, which never uses a development fallback (else: ${fallback})`;

export const PROVIDER_VARIABLES = 'OPENAI_BASE_URL, AZURE_OPENAI_ENDPOINT, BEDROCK_REGION or ONPREM_BASE_URL';

/**
 * The one table of development fallbacks. A command not listed for a row never takes that
 * fallback: the gateway keeps Idempotency-Key records in the database table without Redis (shared
 * by every replica), and migrate, schema-ready and the replay CLI verify no tokens.
 */
export const DEVELOPMENT_FALLBACKS: readonly Fallback[] = [
  {
    code: 'production.embedded_database',
    variable: 'DATABASE_URL',
    commands: IMAGE_COMMANDS,
    taken: (facts) => !facts.databaseUrl,
    problem: mustBeSet('an embedded database under DATA_DIR'),
  },
  {
    code: 'production.development_signing_key',
    variable: 'AUTH_JWKS_URL or AUTH_PUBLIC_KEY',
    // The worker opens the same platform (database and token verifier) as the doors.
    commands: SERVING,
    taken: (facts) => !facts.auth.jwksUrl && !facts.auth.publicKey,
    problem: mustBeSet('a development signing key generated under DATA_DIR'),
  },
  {
    code: 'production.in_process_bus',
    variable: 'NATS_URL',
    // The catalog replays dead letters from the broker.
    commands: ['catalog', 'worker', 'all'],
    taken: (facts) => !facts.natsUrl,
    problem: mustBeSet('an in-process event bus no other process can reach'),
  },
  {
    code: 'production.in_memory_quotas',
    variable: 'REDIS_URL',
    commands: ['ai', 'all'],
    taken: (facts) => !facts.redisUrl,
    problem: mustBeSet('quotas counted in this process only'),
  },
  {
    code: 'production.cors_any_origin',
    variable: 'CORS_ORIGINS',
    commands: ['gateway', 'all'],
    taken: (facts) => facts.corsOrigins === '*',
    problem:
      'is * and NODE_ENV=production: any web page could call this API with its users\u2019 tokens; list the origins, or set CORS_ALLOW_ANY_ORIGIN=true',
    optIn: {
      allowed: (facts) => facts.corsAllowAnyOrigin === true,
      warning: 'CORS_ORIGINS=* with CORS_ALLOW_ANY_ORIGIN=true: any web page may call this API in production',
    },
  },
  {
    code: 'production.mock_provider',
    variable: PROVIDER_VARIABLES,
    commands: ['ai', 'all'],
    taken: (facts) => (facts.realProviders ?? []).length === 0,
    problem:
      'must be set when NODE_ENV=production: without a real model provider every assist would get the mock provider\u2019s canned text; set AI_ALLOW_MOCK_PROVIDER=true to serve it knowingly',
    optIn: {
      allowed: (facts) => facts.allowMockProvider === true,
      warning:
        'AI_ALLOW_MOCK_PROVIDER=true: the mock provider answers assists with canned text in production wherever a routing rule names it',
    },
  },
];

export interface ProductionCheck {
  refusals: Refusal[];
  /** One line per opt-in in use, to log at start. */
  warnings: string[];
}

/** The development fallbacks `command` would take with these facts: refused, or warned about when opted in. */
export function productionCheck(command: ImageCommand, facts: ProductionFacts): ProductionCheck {
  const check: ProductionCheck = { refusals: [], warnings: [] };
  if (!facts.production) return check;
  for (const fallback of DEVELOPMENT_FALLBACKS) {
    if (!fallback.commands.includes(command) || !fallback.taken(facts)) continue;
    if (fallback.optIn?.allowed(facts)) check.warnings.push(fallback.optIn.warning);
    else check.refusals.push({ code: fallback.code, variable: fallback.variable, problem: fallback.problem });
  }
  return check;
}

/**
 * Whether the mock provider may serve: always in development; in production only with the opt-in,
 * so a routing rule that falls back to `mock` passes it over (not configured) instead of answering
 * canned text as if it were a model.
 */
export function mockProviderServes(facts: Pick<ProductionFacts, 'production' | 'allowMockProvider'>): boolean {
  return !facts.production || facts.allowMockProvider === true;
}

/** The one line of a refusal: the first variable named, then every other one. */
export function refusalLine(refusals: readonly Refusal[]): { variable: string; problem: string } {
  const [first, ...rest] = refusals;
  return {
    variable: first.variable,
    problem: [first.problem, ...rest.map((refusal) => `${refusal.variable} ${refusal.problem}`)].join('; '),
  };
}
