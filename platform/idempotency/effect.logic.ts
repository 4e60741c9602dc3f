import { canonicalHash } from '../text/canonical-json.js';

/**
 * The subgraph half of the Idempotency-Key rules, as pure functions. The gateway's record answers
 * retries in the common case; it is written after the subgraph's commit, so a crash between the
 * two loses it. Each keyed mutation therefore also writes an effect row — its result under a key
 * derived from the request — in its own transaction, and a retry that finds the row answers it.
 */
export interface EffectClaim {
  /** tenant|subject|field|alias|Idempotency-Key: the same scope as the gateway's record, per field. */
  key: string;
  /** The field and its arguments: the same key with other arguments is another request (422). */
  fingerprint: string;
  ttlSeconds: number;
  /** Set once a transaction has taken the claim; a keyed mutation that never does is reported. */
  consumed: boolean;
}

export interface EffectRequest {
  tenantId: string;
  subject: string;
  /** The mutation field's name, and its alias (its response key) so two aliased calls stay apart. */
  field: string;
  alias: string;
  args: unknown;
  idempotencyKey: string;
}

export function effectClaim(request: EffectRequest, ttlSeconds: number): EffectClaim {
  const key =
    effectCallerPrefix(request.tenantId, request.subject) +
    [request.field, request.alias, request.idempotencyKey].map((part) => encodeURIComponent(part)).join('|');
  // Arguments may hold Dates (custom scalars): tagged first, so two instants never hash alike.
  const fingerprint = canonicalHash(JSON.parse(encodeEffectValue({ field: request.field, args: request.args ?? null })));
  return { key, fingerprint, ttlSeconds, consumed: false };
}

/** The start of every effect key of a tenant's mutations. */
export function effectTenantPrefix(tenantId: string): string {
  return `${encodeURIComponent(tenantId)}|`;
}

/** The start of every effect key of a caller's mutations in a tenant (a GDPR erasure deletes them). */
export function effectCallerPrefix(tenantId: string, subject: string): string {
  return `${effectTenantPrefix(tenantId)}${encodeURIComponent(subject)}|`;
}

/*
 * A mutation's result is plain data, but it holds Dates (and could hold big integers or bytes),
 * which JSON would turn into strings the resolvers no longer recognise. They are written as
 * one-key tagged objects and revived on the way back.
 */
const DATE = '$effect:date';
const BIGINT = '$effect:bigint';
const BYTES = '$effect:bytes';

export function encodeEffectValue(value: unknown): string {
  const text = JSON.stringify(value ?? null, function (this: Record<string, unknown>, key, converted: unknown) {
    // JSON.stringify has already called Date#toJSON on `converted`: the original is on the holder.
    const raw = this[key];
    if (raw instanceof Date) return { [DATE]: Number.isNaN(raw.getTime()) ? null : raw.toISOString() };
    if (typeof raw === 'bigint') return { [BIGINT]: raw.toString() };
    if (raw instanceof Uint8Array) return { [BYTES]: Buffer.from(raw).toString('base64') };
    return converted;
  });
  return text;
}

export function decodeEffectValue<T>(text: string): T {
  return JSON.parse(text, (_key, value: unknown) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    const entries = Object.keys(value);
    if (entries.length !== 1) return value;
    const tagged = value as Record<string, unknown>;
    if (DATE in tagged) return tagged[DATE] === null ? new Date(Number.NaN) : new Date(tagged[DATE] as string);
    if (BIGINT in tagged) return BigInt(tagged[BIGINT] as string);
    if (BYTES in tagged) return new Uint8Array(Buffer.from(tagged[BYTES] as string, 'base64'));
    return value;
  }) as T;
}
