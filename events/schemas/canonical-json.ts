import { createHash } from 'node:crypto';

/**
 * RFC 8785 (JSON Canonicalization Scheme). ECMAScript's JSON.stringify already serialises strings
 * and finite numbers exactly as the RFC requires; what it leaves open is member order (the RFC
 * sorts by UTF-16 code units, which is what the default string comparison does) and values JSON
 * cannot represent, which must be refused rather than silently dropped.
 */
export function canonicalize(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`canonical JSON cannot represent ${value}`);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((item) => canonicalize(item)).join(',')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalize(v)}`).join(',')}}`;
  }
  throw new TypeError(`canonical JSON cannot represent a ${typeof value}`);
}

/** Lowercase hex SHA-256 of the canonical form: equal schemas get equal digests whatever their layout. */
export function canonicalDigest(value: unknown): string {
  return createHash('sha256').update(canonicalize(value), 'utf8').digest('hex');
}
