import { createHash, createHmac } from 'node:crypto';
import canonicalize from 'canonicalize';

/**
 * RFC 8785 (JSON Canonicalization Scheme), by `canonicalize` (the implementation of the RFC's
 * author): members sorted by UTF-16 code units at every depth, no whitespace, numbers in ECMAScript
 * form, NaN, Infinity and lone surrogates refused. Values go through JSON.stringify's rules first:
 * a Date becomes its ISO string, an undefined member is left out, an undefined array item is null.
 */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError(`canonical JSON cannot represent ${typeof value}`);
  return text;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Lowercase hex HMAC-SHA-256 of `text` under `key` (a pseudonym: stable per key, opaque without it). */
export function hmacSha256Hex(key: string, text: string): string {
  return createHmac('sha256', key).update(text, 'utf8').digest('hex');
}

/** Lowercase hex SHA-256 of the canonical form: equal values get equal hashes whatever their layout. */
export function canonicalHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
