import { createHmac } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { SignJWT, importJWK } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateEd25519, mintToken, type DevKeyPair } from '../../../platform/auth/dev-keys.js';
import { authenticateRequest, createTokenVerifier, requireScope, type TokenVerifier } from '../../../platform/auth/verifier.js';
import { AppError } from '../../../platform/errors.js';
import { newId } from '../../../platform/ids.js';

const TENANT = newId('tenant');
const USER = newId('user');
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

async function rejects(verifier: TokenVerifier, token: string) {
  const error = await verifier.verify(token).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe('UNAUTHENTICATED');
  expect((error as AppError).status).toBe(401);
  // The same words for every failure: nothing tells an attacker what was wrong.
  expect((error as AppError).message).toBe('A valid bearer token is required');
}

describe('token verification', () => {
  let keys: DevKeyPair;
  let verifier: TokenVerifier;
  const options = { maxTokenLifetimeSeconds: 900, clockToleranceSeconds: 5 };

  beforeAll(async () => {
    keys = await generateEd25519();
    verifier = await createTokenVerifier({ ...options, publicKey: JSON.stringify(keys.publicJwk) });
  });

  it('accepts an EdDSA token and reads sub, tid and scopes', async () => {
    const token = await mintToken(keys.privateJwk, { sub: USER, tid: TENANT, scope: 'ai.assist catalog.read' });
    const principal = await verifier.verify(token);
    expect(principal).toMatchObject({ subject: USER, tenantId: TENANT, token });
    expect([...principal.scopes].sort()).toEqual(['ai.assist', 'catalog.read']);
  });

  it('serves a repeated token from its cache only while the token is valid', async () => {
    let clock = Date.now();
    const cachedVerifier = await createTokenVerifier({ ...options, publicKey: JSON.stringify(keys.publicJwk), now: () => clock });
    const token = await mintToken(keys.privateJwk, { sub: USER, tid: TENANT, scope: 'catalog.read', ttlSeconds: 120 });
    const first = await cachedVerifier.verify(token);
    expect(await cachedVerifier.verify(token)).toEqual(first);
    // Past the cache's minute the token is verified again (and still valid).
    clock += 61_000;
    expect((await cachedVerifier.verify(token)).tenantId).toBe(TENANT);
    // Past its exp (plus the tolerance) a cached token is refused like any other expired one.
    clock += 65_000;
    await rejects(cachedVerifier, token);
    // A tampered copy never matches the cached string: it is verified, and fails.
    const [head, payload, signature] = token.split('.');
    await rejects(cachedVerifier, `${head}.${payload}.${signature.slice(0, -2)}AA`);
  });

  it('accepts the PEM form of the public key too', async () => {
    const pemVerifier = await createTokenVerifier({ ...options, publicKey: keys.publicPem });
    const token = await mintToken(keys.privateJwk, { sub: USER, tid: TENANT, scope: '' });
    expect((await pemVerifier.verify(token)).tenantId).toBe(TENANT);
  });

  it('rejects alg none', async () => {
    const now = Math.floor(Date.now() / 1000);
    await rejects(verifier, `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: USER, tid: TENANT, iat: now, exp: now + 60 })}.`);
  });

  it('rejects HS256 signed with the public key as the secret', async () => {
    const now = Math.floor(Date.now() / 1000);
    const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub: USER, tid: TENANT, iat: now, exp: now + 60 })}`;
    const signature = createHmac('sha256', keys.publicPem).update(head).digest('base64url');
    await rejects(verifier, `${head}.${signature}`);
  });

  it('rejects expired, not-yet-valid, too long-lived and exp-less tokens', async () => {
    const key = await importJWK(keys.privateJwk, 'EdDSA');
    const now = Math.floor(Date.now() / 1000);
    const sign = (claims: Record<string, unknown>) =>
      new SignJWT({ tid: TENANT, ...claims }).setProtectedHeader({ alg: 'EdDSA' }).setSubject(USER).sign(key);
    await rejects(verifier, await sign({ iat: now - 1000, exp: now - 100 }));
    await rejects(verifier, await sign({ iat: now, nbf: now + 600, exp: now + 700 }));
    await rejects(verifier, await sign({ iat: now + 600, exp: now + 700 }));
    await rejects(verifier, await sign({ iat: now, exp: now + 3600 }));
    await rejects(verifier, await sign({ exp: now + 3600 }));
    await rejects(verifier, await sign({ iat: now }));
  });

  it('rejects a token signed by another key, a tampered payload and a malformed tenant', async () => {
    const other = await generateEd25519();
    await rejects(verifier, await mintToken(other.privateJwk, { sub: USER, tid: TENANT, scope: '' }));
    const token = await mintToken(keys.privateJwk, { sub: USER, tid: TENANT, scope: 'ai.assist' });
    const [head, , signature] = token.split('.');
    const now = Math.floor(Date.now() / 1000);
    await rejects(
      verifier,
      `${head}.${b64({ sub: USER, tid: newId('tenant'), scope: 'ai.admin', iat: now, exp: now + 60 })}.${signature}`,
    );
    await rejects(verifier, await mintToken(keys.privateJwk, { sub: USER, tid: 'tenant-1', scope: '' }));
  });

  it('rejects an oversized token before parsing it', async () => {
    const token = await mintToken(keys.privateJwk, { sub: USER, tid: TENANT, scope: 'x'.repeat(9000) });
    await rejects(verifier, token);
  });

  it('rejects a kid that the JWKS does not hold', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'jwks-'));
    const file = path.join(dir, 'jwks.json');
    await fs.writeFile(file, JSON.stringify({ keys: [keys.publicJwk] }));
    const jwksVerifier = await createTokenVerifier({ ...options, jwksUrl: pathToFileURL(file).toString() });
    const good = await mintToken(keys.privateJwk, { sub: USER, tid: TENANT, scope: '' });
    expect((await jwksVerifier.verify(good)).subject).toBe(USER);
    await rejects(
      jwksVerifier,
      await mintToken({ ...keys.privateJwk, kid: 'unknown-kid' }, { sub: USER, tid: TENANT, scope: '' }),
    );
  });
});

describe('request rule: X-Tenant-Id must equal tid', () => {
  it('answers 401 without a token, 400 without the header and 403 authz.tenant_not_a_member on mismatch', async () => {
    const keys = await generateEd25519();
    const verifier = await createTokenVerifier({
      publicKey: JSON.stringify(keys.publicJwk),
      maxTokenLifetimeSeconds: 900,
      clockToleranceSeconds: 5,
    });
    const token = await mintToken(keys.privateJwk, { sub: USER, tid: TENANT, scope: 'catalog.read' });
    const attempt = (headers: { authorization?: string; tenantId?: string }) =>
      authenticateRequest(verifier, headers).then(
        () => undefined,
        (e: AppError) => [e.status, e.code],
      );
    expect(await attempt({ tenantId: TENANT })).toEqual([401, 'UNAUTHENTICATED']);
    expect(await attempt({ authorization: `Basic ${token}`, tenantId: TENANT })).toEqual([401, 'UNAUTHENTICATED']);
    expect(await attempt({ authorization: `Bearer ${token}` })).toEqual([400, 'authz.tenant_header_required']);
    expect(await attempt({ authorization: `Bearer ${token}`, tenantId: newId('tenant') })).toEqual([
      403,
      'authz.tenant_not_a_member',
    ]);
    const principal = await authenticateRequest(verifier, { authorization: `Bearer ${token}`, tenantId: TENANT });
    expect(principal.tenantId).toBe(TENANT);
    expect(() => requireScope(principal, 'catalog.admin')).toThrow(
      expect.objectContaining({ code: 'authz.scope_missing', status: 403 }),
    );
    expect(() => requireScope(principal, 'catalog.read')).not.toThrow();
  });
});
