/**
 * Generic environment parsers every part builds its configuration slice from. Each one reads one
 * variable, falls back when it is unset or blank, and throws a ConfigError naming the variable
 * when the value is wrong, so a bad value fails start-up with one line (platform/lifecycle/entrypoint.ts).
 */

/** The environment a configuration is read from (`process.env`, or a plain object in tests). */
export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`Invalid configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

/** The trimmed value, or undefined when the variable is unset or blank. */
export function envString(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

export function envInt(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = envString(env, name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

export function envBool(env: Env, name: string, fallback: boolean): boolean {
  const raw = envString(env, name);
  if (raw === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

/** A URL whose scheme is one of `protocols` (with the colon: `https:`). */
export function envUrl(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = envString(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, 'must be a URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
  return raw;
}

/** A comma-separated list; blank items are dropped. */
export function envList(env: Env, name: string, fallback: string[]): string[] {
  const raw = envString(env, name);
  if (raw === undefined) return fallback;
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

/** A comma-separated list whose every item (or `*`) matches `pattern`; `what` names an item in the error. */
export function envPatternList(env: Env, name: string, fallback: string[], pattern: RegExp, what: string): string[] {
  const values = envList(env, name, fallback);
  for (const value of values) {
    if (value !== '*' && !pattern.test(value)) throw new ConfigError(name, `has an invalid ${what} "${value}"`);
  }
  return values;
}

/** A number between 0 and 1 (a sampling ratio). */
export function envRatio(env: Env, name: string, fallback: number): number {
  const raw = envString(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d*\.?\d+$/.test(raw) || value > 1) throw new ConfigError(name, `must be a number between 0 and 1, got "${raw}"`);
  return value;
}

export function envDecimal(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = envString(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d*\.?\d+$/.test(raw) || value < min || value > max)
    throw new ConfigError(name, `must be a number between ${min} and ${max}, got "${raw}"`);
  return value;
}

export function envOneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = envString(env, name) ?? fallback;
  if (!(values as readonly string[]).includes(raw))
    throw new ConfigError(name, `must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
}

/** `key=value,key2=value2`, values URL-encoded (the OTel specification's header format). */
export function envKeyValuePairs(env: Env, name: string): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const pair of envList(env, name, [])) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new ConfigError(name, 'must be a comma-separated list of key=value pairs');
    try {
      pairs[pair.slice(0, at).trim().toLowerCase()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new ConfigError(name, 'has a value that is not URL-encoded');
    }
  }
  return pairs;
}
