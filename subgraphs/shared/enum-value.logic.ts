/**
 * How a consumed enum value reads. The spec's versioning table makes enum widening a minor change
 * that consumers must tolerate, so a value we do not know is `unknown` (the handler decides what
 * it means), while one that could not be anyone's enum value is `invalid` and dead-lettered: not
 * a string, empty, longer than 64 characters, or not a token (letters, digits, `_ . : -`, starting
 * with a letter or digit). The schema check already refuses a wrong type; this is the second half. Shared: both
 * subgraphs read the GDPR request type the same way.
 */
export type EnumReading = 'known' | 'unknown' | 'invalid';

const ENUM_TOKEN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

export function readEnumValue(value: unknown, known: readonly string[]): EnumReading {
  if (typeof value !== 'string' || !ENUM_TOKEN.test(value)) return 'invalid';
  return known.includes(value) ? 'known' : 'unknown';
}
