import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * Secrets, tokens and prompt/output text never reach a log line: redaction happens here, at the
 * logger, so a careless call site cannot leak them.
 */
export const REDACTED_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'token',
  '*.token',
  'apiKey',
  '*.apiKey',
  'secret',
  '*.secret',
  'password',
  '*.password',
  'prompt',
  '*.prompt',
  'renderedPrompt',
  '*.renderedPrompt',
  'output',
  '*.output',
  'text',
  '*.text',
  'variables',
  '*.variables',
];

export function createLogger(options: { level?: string; name?: string; destination?: pino.DestinationStream } = {}): Logger {
  return pino(
    {
      name: options.name,
      level: options.level ?? 'info',
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination,
  );
}

/** A logger that drops everything, for unit tests. */
export const silentLogger: Logger = pino({ level: 'silent' });
