import { TokenRejectedError, type TokenRejection, type TokenVerifier } from '../../auth/verifier.js';
import { AppError, isAppError } from '../../errors/errors.js';
import { header } from '../http.js';
import { endpointOf, type Stage } from '../pipeline.js';

/** The protection space of every door (gateway, REST, subgraphs): one token opens them all. */
export const AUTH_REALM = 'catalog-ai';

/** RFC 6750 §2.1: `Bearer` then one token68 (a JWT is one). */
const BEARER = /^Bearer(?:\s+(.*))?$/i;
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;

/** What a client may learn about a refused token: whether it expired, nothing more. */
const DESCRIPTIONS: Record<TokenRejection, string> = {
  expired: 'The access token expired',
  invalid: 'The access token is invalid',
};

/**
 * The 401 of RFC 6750 §3. A request that presents no bearer token (none, or another scheme) gets
 * the bare challenge, without an error code; a presented token that fails gets `invalid_token`
 * and whether it expired. The body says the same as the header, for clients that read only bodies.
 */
export function unauthenticatedChallenge(rejection?: TokenRejection): AppError {
  const challenge = rejection
    ? `Bearer realm="${AUTH_REALM}", error="invalid_token", error_description="${DESCRIPTIONS[rejection]}"`
    : `Bearer realm="${AUTH_REALM}"`;
  return new AppError('UNAUTHENTICATED', rejection ? DESCRIPTIONS[rejection] : 'A valid bearer token is required', {
    status: 401,
    headers: { 'www-authenticate': challenge },
  });
}

/** The caller of every non-public endpoint: a verified bearer token (401 with WWW-Authenticate otherwise). */
export function authenticate(verifier: TokenVerifier): Stage {
  return async (exchange, next) => {
    if (endpointOf(exchange).access === 'public') return next(exchange);
    const credentials = BEARER.exec(header(exchange.req, 'authorization')?.trim() ?? '')?.[1]?.trim();
    if (!credentials) throw unauthenticatedChallenge();
    if (!TOKEN68.test(credentials)) throw unauthenticatedChallenge('invalid');
    try {
      exchange.principal = await verifier.verify(credentials);
    } catch (error) {
      if (!isAppError(error) || error.code !== 'UNAUTHENTICATED') throw error;
      throw unauthenticatedChallenge(error instanceof TokenRejectedError ? error.reason : 'invalid');
    }
    return next(exchange);
  };
}

/**
 * The tenant rule of the spec: X-Tenant-Id is required and must equal the token's `tid`
 * (403 authz.tenant_not_a_member), so a caller never acts in a tenant it does not belong to.
 */
export function tenantGuard(): Stage {
  return async (exchange, next) => {
    if (endpointOf(exchange).access === 'public') return next(exchange);
    const { principal } = exchange;
    if (!principal) throw new Error('tenantGuard() must come after authenticate()');
    const claimed = header(exchange.req, 'x-tenant-id');
    if (!claimed) throw new AppError('authz.tenant_header_required', 'The X-Tenant-Id header is required', { status: 400 });
    if (claimed !== principal.tenantId) {
      throw new AppError('authz.tenant_not_a_member', 'The caller is not a member of the tenant in X-Tenant-Id', {
        status: 403,
      });
    }
    return next(exchange);
  };
}
