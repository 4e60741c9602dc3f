import pino, { type Logger } from 'pino';
import { requestLogFields } from './request-scope.js';

export type { Logger };

/**
 * Secrets, tokens and prompt/output text never reach a log line: redaction happens here, at the
 * logger, so a careless call site cannot leak them. Keys are matched at any depth, whatever their
 * case, with `-` and `_` ignored (scrubValue); pino's own path redaction below also covers child
 * logger bindings, which no formatter sees.
 */
const SENSITIVE_KEY_NAMES = [
  'authorization',
  'proxyAuthorization',
  'cookie',
  'setCookie',
  'token',
  'accessToken',
  'refreshToken',
  'idToken',
  'apiKey',
  'xApiKey',
  'secret',
  'clientSecret',
  'password',
  'privateKey',
  'vaultToken',
  'prompt',
  'renderedPrompt',
  'systemPrompt',
  'input',
  'output',
  'outputText',
  'completion',
  'text',
  'messages',
  'variables',
];

const SENSITIVE_KEYS = new Set(SENSITIVE_KEY_NAMES.map(normaliseKey));

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export const REDACTED_PATHS = [...new Set(SENSITIVE_KEY_NAMES.flatMap((key) => [key, snake(key)]))].flatMap((key) => [
  key,
  `*.${key}`,
]);

const CENSOR = '[redacted]';

function normaliseKey(key: string): string {
  return key.replace(/[-_]/g, '').toLowerCase();
}

/** Credentials that can turn up inside free text (error messages, URLs): JWTs, bearer tokens, key=value secrets. */
const SECRET_PATTERNS: Array<[RegExp, string]> = [
  [/\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, CENSOR],
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${CENSOR}`],
  [/\b(api[-_]?key|token|secret|password)=([^\s&"']+)/gi, `$1=${CENSOR}`],
  [/\bsk-[A-Za-z0-9_-]{12,}/g, CENSOR],
];

export function scrubText(value: string): string {
  let out = value;
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

const MAX_DEPTH = 8;

/** A copy of `value` with sensitive keys censored at any depth and credentials scrubbed from strings. */
export function scrubValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (value === null || typeof value !== 'object' || depth >= MAX_DEPTH) return value;
  if (value instanceof Error) return value;
  if (Array.isArray(value)) return value.map((item) => scrubValue(item, depth + 1));
  if (Buffer.isBuffer(value) || value instanceof Date) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] =
      SENSITIVE_KEYS.has(normaliseKey(key)) && item !== undefined && item !== null ? CENSOR : scrubValue(item, depth + 1);
  }
  return out;
}

function scrubError(error: unknown): unknown {
  return scrubValue(pino.stdSerializers.err(error as Error));
}

export function createLogger(options: { level?: string; name?: string; destination?: pino.DestinationStream } = {}): Logger {
  return pino(
    {
      name: options.name,
      level: options.level ?? 'info',
      redact: { paths: REDACTED_PATHS, censor: CENSOR },
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: scrubError, error: scrubError },
      formatters: {
        log: (object) => scrubValue(object) as Record<string, unknown>,
        bindings: (bindings) => scrubValue(bindings) as Record<string, unknown>,
      },
      // The message string is the one place pino's redaction never looks.
      hooks: {
        logMethod(args, method) {
          const scrubbed = args.map((arg) => (typeof arg === 'string' ? scrubText(arg) : arg)) as Parameters<typeof method>;
          return method.apply(this, scrubbed);
        },
      },
      // requestId, traceId and tenantId of the request being served, unless a child logger already binds them.
      mixin: (_object, _level, logger) => {
        const fields = requestLogFields();
        const bound = logger.bindings();
        for (const key of Object.keys(fields)) if (key in bound) delete fields[key];
        return fields;
      },
    },
    options.destination,
  );
}

const noop = () => undefined;

/**
 * `logger.child(bindings)`, made when it is first used: making a child runs pino's redaction over
 * its bindings, which was 2–4 % of the AI subgraph’s CPU under assist load (bench/results/
 * 2026-11-26T0806-assist-levers.md) for requests that, below LOG_LEVEL=info, mostly log nothing. A
 * call at a level that is off returns without making it; anything else is the child's.
 */
export function lazyChild(logger: Logger, bindings: pino.Bindings): Logger {
  let child: Logger | undefined;
  const made = () => (child ??= logger.child(bindings));
  return new Proxy(logger, {
    get(_parent, property) {
      if (typeof property === 'string' && property in logger.levels.values && !logger.isLevelEnabled(property)) return noop;
      const target = made();
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A logger that drops everything, for unit tests. */
export const silentLogger: Logger = pino({ level: 'silent' });
