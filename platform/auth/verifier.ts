import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeProtectedHeader,
  importJWK,
  importSPKI,
  jwtVerify,
  type JWTVerifyGetKey,
  type JWK,
} from 'jose';

type KeyLike = Awaited<ReturnType<typeof importSPKI>>;
import { AppError, unauthenticated } from '../errors.js';
import { isId } from '../ids.js';

export interface Principal {
  subject: string;
  tenantId: string;
  scopes: ReadonlySet<string>;
  /** The raw bearer token, forwarded by the gateway to the subgraphs (which verify it again). */
  token: string;
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
  now?: () => number;
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
 * Verifies `Authorization: Bearer` tokens: Ed25519 (EdDSA) only, `exp` required, no token living
 * longer than the configured maximum (spec: 15 minutes). Every failure is the same 401 with no
 * detail, so a caller learns nothing about why a forged token failed.
 */
export async function createTokenVerifier(options: VerifierOptions): Promise<TokenVerifier> {
  const key = await keySource(options);
  const now = options.now ?? (() => Date.now());
  const verified = new Map<string, { principal: Principal; validUntilMs: number }>();
  return {
    async verify(token: string): Promise<Principal> {
      if (!token || token.length > MAX_TOKEN_LENGTH) throw unauthenticated();
      const cached = verified.get(token);
      if (cached) {
        if (now() < cached.validUntilMs) return cached.principal;
        verified.delete(token);
      }
      let payload;
      try {
        const header = decodeProtectedHeader(token);
        if (header.alg !== 'EdDSA') throw new Error('algorithm not allowed');
        ({ payload } = await jwtVerify(token, key as never, {
          algorithms: ['EdDSA'],
          requiredClaims: ['exp', 'sub'],
          issuer: options.issuer,
          audience: options.audience,
          clockTolerance: options.clockToleranceSeconds,
          currentDate: new Date(now()),
        }));
      } catch {
        throw unauthenticated();
      }
      const nowSeconds = Math.floor(now() / 1000);
      const lifetime = (payload.exp as number) - (typeof payload.iat === 'number' ? payload.iat : nowSeconds);
      if (lifetime > options.maxTokenLifetimeSeconds + options.clockToleranceSeconds) throw unauthenticated();
      if (typeof payload.iat === 'number' && payload.iat > nowSeconds + options.clockToleranceSeconds) {
        throw unauthenticated();
      }
      const tenantId = payload.tid;
      if (!isId('tenant', tenantId) || typeof payload.sub !== 'string') throw unauthenticated();
      const scope = typeof payload.scope === 'string' ? payload.scope : '';
      const principal: Principal = { subject: payload.sub, tenantId, scopes: new Set(scope.split(' ').filter(Boolean)), token };
      const validUntilMs = Math.min(((payload.exp as number) + options.clockToleranceSeconds) * 1000, now() + CACHE_TTL_MS);
      // Oldest first out: a Map iterates in insertion order.
      if (verified.size >= CACHE_MAX_ENTRIES) verified.delete(verified.keys().next().value!);
      verified.set(token, { principal, validUntilMs });
      return principal;
    },
  };
}

/**
 * The request rule of the spec: a verified token, and X-Tenant-Id equal to its `tid`
 * (403 authz.tenant_not_a_member otherwise).
 */
export async function authenticateRequest(
  verifier: TokenVerifier,
  headers: { authorization?: string; tenantId?: string },
): Promise<Principal> {
  const match = /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? '');
  if (!match) throw unauthenticated();
  const principal = await verifier.verify(match[1]);
  if (!headers.tenantId) {
    throw new AppError('authz.tenant_header_required', 'The X-Tenant-Id header is required', { status: 400 });
  }
  if (headers.tenantId !== principal.tenantId) {
    throw new AppError('authz.tenant_not_a_member', 'The caller is not a member of the tenant in X-Tenant-Id', {
      status: 403,
    });
  }
  return principal;
}

export function requireScope(principal: Principal, scope: string): void {
  if (!principal.scopes.has(scope)) {
    throw new AppError('authz.scope_missing', `This operation needs the scope ${scope}`, { status: 403 });
  }
}
