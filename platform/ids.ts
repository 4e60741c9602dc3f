import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

/**
 * Identifiers are `<prefix>_<26 chars of uppercase Crockford base32>` (spec, "Identifiers").
 * A ULID is exactly 26 Crockford characters, so every id is a ULID under a kind prefix: sortable by
 * creation time, which the cursor paging relies on.
 */
export const ID_PREFIXES = {
  course: 'crs',
  courseVersion: 'crv',
  user: 'usr',
  playPackage: 'pkg',
  taxonomy: 'tax',
  courseDraft: 'drf',
  tenant: 'ten',
  mediaAsset: 'med',
  // Kinds the spec does not list but this service mints, in the same format.
  provenance: 'prv',
  routingRule: 'rtr',
  promptTemplate: 'tpl',
  hitlPolicy: 'hip',
  reviewTask: 'rvt',
  reviewQueue: 'rvq',
  assessment: 'dpa',
  event: 'evt',
  request: 'req',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const CROCKFORD_26 = '[0-9A-HJKMNP-TV-Z]{26}';
const ULID_RE = new RegExp(`^${CROCKFORD_26}$`);
const patterns = Object.fromEntries(
  Object.entries(ID_PREFIXES).map(([kind, prefix]) => [kind, new RegExp(`^${prefix}_${CROCKFORD_26}$`)]),
) as Record<IdKind, RegExp>;

/**
 * The same cryptographic random bytes ulid's default takes, drawn from a pool refilled 4 KiB at a
 * time: the default asks WebCrypto for one byte per character (16 calls per id), which was ~5 % of
 * a busy subgraph's CPU (bench/README.md, assist).
 */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
function pooledRandom(): number {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++] / 256;
}

/**
 * `bytes` cryptographic random bytes as lower-case hex (a trace or span id), from the same pool:
 * two `randomBytes` calls per request were ~2 % of the gateway's CPU (bench/README.md, gateway).
 */
export function randomHex(bytes: number): string {
  if (bytes > pool.length) throw new RangeError(`randomHex: at most ${pool.length} bytes`);
  if (poolAt + bytes > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const hex = pool.toString('hex', poolAt, poolAt + bytes);
  poolAt += bytes;
  return hex;
}

const nextUlid = monotonicFactory(pooledRandom);

export function newUlid(now: number = Date.now()): string {
  return nextUlid(now);
}

export function newId(kind: IdKind, now?: number): string {
  return `${ID_PREFIXES[kind]}_${newUlid(now)}`;
}

export function isId(kind: IdKind, value: unknown): value is string {
  return typeof value === 'string' && patterns[kind].test(value);
}

export function isUlid(value: unknown): value is string {
  return typeof value === 'string' && ULID_RE.test(value);
}

/** The JSON-schema / regex source of an id pattern, for schemas that validate ids. */
export function idPattern(kind: IdKind): string {
  return patterns[kind].source;
}

/** `usr_` followed by 26 zeros: the erased author id of the GDPR rule. */
export const ERASED_USER_ID = `${ID_PREFIXES.user}_${'0'.repeat(26)}`;
