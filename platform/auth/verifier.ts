import { systemClock, type Clock } from '../clock.js';
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeProtectedHeader,
  errors,
  importJWK,
  importSPKI,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWK,
} from 'jose';

type KeyLike = Awaited<ReturnType<typeof importSPKI>>;
import { AppError } from '../errors/errors.js';
import { isId } from '../ids.js';

export interface Principal {
  subject: string;
  tenantId: string;
  scopes: ReadonlySet<string>;
  /** The raw bearer token, forwarded by the gateway to the subgraphs (which verify it again). */
  token: string;
}

/**
 * Why a token was refused, as far as a client may learn it (RFC 6750's `invalid_token` challenge):
 * `expired` for a token that would be accepted but for its `exp`, `invalid` for everything else.
 */
export type TokenRejection = 'expired' | 'invalid';

/**
 * A refused token. The message is the same for every refusal; `reason` is not part of the
 * problem body (it is not a detail): only the authenticate stage reads it, for WWW-Authenticate.
 */
export class TokenRejectedError extends AppError {
  readonly reason: TokenRejection;

  constructor(reason: TokenRejection) {
    super('UNAUTHENTICATED', 'A valid bearer token is required');
    this.name = 'TokenRejectedError';
    this.reason = reason;
  }
}

export interface TokenVerifier {
  verify(token: string): Promise<Principal>;
}

export interface VerifierOptions {
  jwksUrl?: string;
  publicKey?: string;
  issuer?: string;
  audience?: string;
  maxTokenLifetimeSeconds: number;
  clockToleranceSeconds: number;
  clock?: Clock;
}

/** Tokens are small; a huge header or payload is an attack, refused before any parsing. */
const MAX_TOKEN_LENGTH = 8 * 1024;

/**
 * Verified tokens, kept so that a token's Ed25519 check is paid once per process and minute rather
 * than on every request (the gateway and each subgraph verify the same token again; it was 4-6 % of
 * each process's CPU in bench/). Keyed by the exact token string, so only a token that passed every
 * check is ever served from here; an entry ends at the token's exp (with the clock tolerance, as
 * jose allows) or after CACHE_TTL_MS, whichever is first. A JWKS key is cached for 10 minutes
 * anyway, so this keeps nothing alive that the key cache would not.
 */
const CACHE_TTL_MS = 60_000;
const CACHE_MAX_ENTRIES = 10_000;

async function keySource(options: VerifierOptions): Promise<JWTVerifyGetKey | KeyLike | Uint8Array> {
  if (options.jwksUrl) {
    const url = new URL(options.jwksUrl);
    if (url.protocol === 'file:') {
      const jwks = JSON.parse(await fs.readFile(fileURLToPath(url), 'utf8')) as { keys: JWK[] };
      return createLocalJWKSet(jwks);
    }
    return createRemoteJWKSet(url, { cooldownDuration: 30_000, cacheMaxAge: 10 * 60_000 });
  }
  if (options.publicKey) {
    const text = options.publicKey.trim();
    if (text.startsWith('{')) {
      const jwk = JSON.parse(text) as JWK;
      if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519') throw new Error('AUTH_PUBLIC_KEY must be an Ed25519 key');
      return importJWK({ ...jwk, alg: 'EdDSA' }, 'EdDSA');
    }
    return importSPKI(text.replace(/\\n/g, '\n'), 'EdDSA');
  }
  throw new Error('No verification key: set AUTH_JWKS_URL or AUTH_PUBLIC_KEY');
}

/**
 * Verifies `Authorization: Bearer` tokens: Ed25519 (EdDSA) only, `exp`, `iat` and `sub` required,
 * no token living longer than the configured maximum (spec: 15 minutes). Every failure is the same
 * 401; the one thing a caller learns is whether its token expired (so it knows to fetch a new one)
 * or is invalid, never which check failed.
 *
 * The lifetime is what the issuer granted, `exp − iat`, compared with the maximum exactly: the
 * clock tolerance absorbs skew between our clock and the issuer's when `exp`, `nbf` and `iat` are
 * compared with *now*, but a lifetime is a difference of two of the issuer's own timestamps, in
 * which no skew appears. A token without `iat` is refused: its lifetime cannot be known, and
 * measuring from now would accept a day-long token during its last 15 minutes.
 */
export async function createTokenVerifier(options: VerifierOptions): Promise<TokenVerifier> {
  const key = await keySource(options);
  const clock = options.clock ?? systemClock;
  const now = () => clock.now().getTime();
  const verified = new Map<string, { principal: Principal; validUntilMs: number }>();

  /** The checks of ours that jose does not make; they pass or the token is invalid. */
  function principalOf(payload: JWTPayload, token: string): Principal {
    const issuedAt = payload.iat as number;
    if ((payload.exp as number) - issuedAt > options.maxTokenLifetimeSeconds) throw new TokenRejectedError('invalid');
    if (issuedAt > Math.floor(now() / 1000) + options.clockToleranceSeconds) throw new TokenRejectedError('invalid');
    const tenantId = payload.tid;
    if (!isId('tenant', tenantId) || typeof payload.sub !== 'string') throw new TokenRejectedError('invalid');
    const scope = typeof payload.scope === 'string' ? payload.scope : '';
    return { subject: payload.sub, tenantId, scopes: new Set(scope.split(' ').filter(Boolean)), token };
  }

  /**
   * jose compares `exp` with the clock last, after the signature and every other claim it checks,
   * so a JWTExpired on `exp` is a genuine token of ours that only ran out; it is still called
   * invalid when one of our own checks would refuse it anyway.
   */
  function rejectionOf(error: unknown, token: string): TokenRejectedError {
    if (!(error instanceof errors.JWTExpired) || error.claim !== 'exp') return new TokenRejectedError('invalid');
    try {
      principalOf(error.payload, token);
    } catch (invalid) {
      return invalid as TokenRejectedError;
    }
    return new TokenRejectedError('expired');
  }

  return {
    async verify(token: string): Promise<Principal> {
      if (!token || token.length > MAX_TOKEN_LENGTH) throw new TokenRejectedError('invalid');
      const cached = verified.get(token);
      if (cached) {
        if (now() < cached.validUntilMs) return cached.principal;
        verified.delete(token);
      }
      let payload: JWTPayload;
      try {
        const header = decodeProtectedHeader(token);
        if (header.alg !== 'EdDSA') throw new Error('algorithm not allowed');
        ({ payload } = await jwtVerify(token, key as never, {
          algorithms: ['EdDSA'],
          requiredClaims: ['exp', 'iat', 'sub'],
          issuer: options.issuer,
          audience: options.audience,
          clockTolerance: options.clockToleranceSeconds,
          currentDate: new Date(now()),
        }));
      } catch (error) {
        throw rejectionOf(error, token);
      }
      const principal = principalOf(payload, token);
      const validUntilMs = Math.min(((payload.exp as number) + options.clockToleranceSeconds) * 1000, now() + CACHE_TTL_MS);
      // Oldest first out: a Map iterates in insertion order.
      if (verified.size >= CACHE_MAX_ENTRIES) verified.delete(verified.keys().next().value!);
      verified.set(token, { principal, validUntilMs });
      return principal;
    },
  };
}

/**
 * The scope rule of every operation: the token holds at least one of `accepted`, otherwise 403
 * authz.scope_missing naming them (`acceptedScopes`), so the caller knows which scope to ask its
 * identity provider for.
 */
export function requireAnyScope(principal: Principal, accepted: readonly [string, ...string[]]): void {
  if (accepted.some((scope) => principal.scopes.has(scope))) return;
  const named = accepted.length === 1 ? `the scope ${accepted[0]}` : `one of the scopes ${accepted.join(', ')}`;
  throw new AppError('authz.scope_missing', `This operation needs ${named}`, {
    status: 403,
    details: { acceptedScopes: [...accepted] },
  });
}
