import { manualClock } from '../../../platform/clock.js';
import { createHmac } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { SignJWT, importJWK } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateEd25519, mintToken, type DevKeyPair } from '../../../platform/auth/dev-keys.js';
import {
  createTokenVerifier,
  requireAnyScope,
  TokenRejectedError,
  type TokenRejection,
  type TokenVerifier,
} from '../../../platform/auth/verifier.js';
import { AppError } from '../../../platform/errors/errors.js';
import { newId } from '../../../platform/ids.js';

const TENANT = newId('tenant');
const USER = newId('user');
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

async function rejects(verifier: TokenVerifier, token: string, reason: TokenRejection = 'invalid') {
  const error = await verifier.verify(token).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe('UNAUTHENTICATED');
  expect((error as AppError).status).toBe(401);
  // The same words for every failure: nothing tells an attacker what was wrong.
  expect((error as AppError).message).toBe('A valid bearer token is required');
  // Only "it expired" is told apart (for the WWW-Authenticate challenge), and never as a detail of the body.
  expect(error).toBeInstanceOf(TokenRejectedError);
  expect((error as TokenRejectedError).reason).toBe(reason);
  expect((error as AppError).details).toBeUndefined();
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

  it('mints a token living exactly its ttl when the clock crosses a second while it is minted', async () => {
    // Each reading of the clock is a millisecond later than the one before, starting 1 ms before a
    // whole second: a minter reading it twice would date iat and exp a second apart.
    const RealDate = Date;
    let nowMs = 1_800_000_000_000 - 1;
    const tick = () => nowMs++;
    class SteppingDate extends RealDate {
      constructor(...args: unknown[]) {
        if (args.length === 0) super(tick());
        else super(...(args as [number]));
      }
      static override now(): number {
        return tick();
      }
    }
    globalThis.Date = SteppingDate as DateConstructor;
    let token: string;
    try {
      token = await mintToken(keys.privateJwk, { sub: USER, tid: TENANT, scope: 'catalog.read' });
    } finally {
      globalThis.Date = RealDate;
    }
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { iat: number; exp: number };
    expect(claims.exp - claims.iat).toBe(900);
    const atIssue = await createTokenVerifier({
      ...options,
      publicKey: JSON.stringify(keys.publicJwk),
      clock: manualClock(new Date(claims.iat * 1000)),
    });
    await expect(atIssue.verify(token)).resolves.toMatchObject({ tenantId: TENANT });
  });

  it('serves a repeated token from its cache only while the token is valid', async () => {
    const token = await mintToken(keys.privateJwk, { sub: USER, tid: TENANT, scope: 'catalog.read', ttlSeconds: 120 });
    // The clock starts at the token's iat (whole seconds), so "past exp plus the tolerance" below
    // does not depend on where in a second the test happened to start.
    const { iat } = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { iat: number };
    const clock = manualClock(new Date(iat * 1000));
    const cachedVerifier = await createTokenVerifier({ ...options, publicKey: JSON.stringify(keys.publicJwk), clock });
    const first = await cachedVerifier.verify(token);
    expect(await cachedVerifier.verify(token)).toEqual(first);
    // Past the cache's minute the token is verified again (and still valid).
    clock.advance(61_000);
    expect((await cachedVerifier.verify(token)).tenantId).toBe(TENANT);
    // Past its exp (plus the tolerance) a cached token is refused like any other expired one.
    clock.advance(65_000);
    await rejects(cachedVerifier, token, 'expired');
    // A tampered copy never matches the cached string: it is verified, and fails.
    // (Its first character changed: replacing the last two with "AA" left an unchanged copy when
    // the signature already ended so.)
    const [head, payload, signature] = token.split('.');
    const tampered = `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;
    await rejects(cachedVerifier, `${head}.${payload}.${tampered}`);
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
    await rejects(verifier, await sign({ iat: now - 1000, exp: now - 100 }), 'expired');
    await rejects(verifier, await sign({ iat: now, nbf: now + 600, exp: now + 700 }));
    await rejects(verifier, await sign({ iat: now + 600, exp: now + 700 }));
    await rejects(verifier, await sign({ iat: now, exp: now + 3600 }));
    await rejects(verifier, await sign({ exp: now + 3600 }));
    await rejects(verifier, await sign({ iat: now }));
  });

  describe('token lifetime: exp − iat at most AUTH_MAX_TOKEN_LIFETIME_SECONDS, the clock tolerance never added', () => {
    // The tolerance is large here so that adding it to the lifetime (the old bug) would show.
    const lifetimeOptions = { maxTokenLifetimeSeconds: 900, clockToleranceSeconds: 30 };
    const signAt = async (claims: Record<string, unknown>) =>
      new SignJWT({ tid: TENANT, ...claims })
        .setProtectedHeader({ alg: 'EdDSA' })
        .setSubject(USER)
        .sign(await importJWK(keys.privateJwk, 'EdDSA'));
    let lifetimeVerifier: TokenVerifier;
    beforeAll(async () => {
      lifetimeVerifier = await createTokenVerifier({ ...lifetimeOptions, publicKey: JSON.stringify(keys.publicJwk) });
    });

    it('accepts exactly 900 s', async () => {
      const now = Math.floor(Date.now() / 1000);
      expect((await lifetimeVerifier.verify(await signAt({ iat: now, exp: now + 900 }))).subject).toBe(USER);
    });

    it.each([901, 929, 930])('refuses %i s: the clock tolerance does not stretch the maximum', async (lifetime) => {
      const now = Math.floor(Date.now() / 1000);
      await rejects(lifetimeVerifier, await signAt({ iat: now, exp: now + lifetime }));
    });

    it('measures the lifetime from iat, not from now: a 901 s token is refused late in its life too', async () => {
      const now = Math.floor(Date.now() / 1000);
      await rejects(lifetimeVerifier, await signAt({ iat: now - 600, exp: now + 301 }));
      expect((await lifetimeVerifier.verify(await signAt({ iat: now - 600, exp: now + 300 }))).subject).toBe(USER);
    });

    it('refuses a token without iat, even one expiring within the maximum (its lifetime cannot be known)', async () => {
      const now = Math.floor(Date.now() / 1000);
      await rejects(lifetimeVerifier, await signAt({ exp: now + 60 }));
    });

    it('still applies the clock tolerance to exp, nbf and iat against the clock', async () => {
      const now = Math.floor(Date.now() / 1000);
      // Expired 20 s ago, issued 20 s ahead, valid from 20 s ahead: all within the 30 s tolerance.
      expect((await lifetimeVerifier.verify(await signAt({ iat: now - 800, exp: now - 20 }))).subject).toBe(USER);
      expect((await lifetimeVerifier.verify(await signAt({ iat: now + 20, exp: now + 600 }))).subject).toBe(USER);
      expect((await lifetimeVerifier.verify(await signAt({ iat: now, nbf: now + 20, exp: now + 600 }))).subject).toBe(USER);
      await rejects(lifetimeVerifier, await signAt({ iat: now - 850, exp: now - 40 }), 'expired');
      await rejects(lifetimeVerifier, await signAt({ iat: now + 40, exp: now + 600 }));
    });
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
    try {
      const jwksVerifier = await createTokenVerifier({ ...options, jwksUrl: pathToFileURL(file).toString() });
      const good = await mintToken(keys.privateJwk, { sub: USER, tid: TENANT, scope: '' });
      expect((await jwksVerifier.verify(good)).subject).toBe(USER);
      await rejects(
        jwksVerifier,
        await mintToken({ ...keys.privateJwk, kid: 'unknown-kid' }, { sub: USER, tid: TENANT, scope: '' }),
      );
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('scope rule: at least one of the accepted scopes', () => {
  const principal = { subject: USER, tenantId: TENANT, scopes: new Set(['catalog.read', 'ai.assist']), token: 't' };
  const refusal = (accepted: readonly [string, ...string[]]) => {
    try {
      requireAnyScope(principal, accepted);
      return undefined;
    } catch (error) {
      return error as AppError;
    }
  };

  it('passes when any one accepted scope is held', () => {
    expect(refusal(['catalog.read'])).toBeUndefined();
    expect(refusal(['catalog.admin', 'catalog.read'])).toBeUndefined();
    expect(refusal(['ai.review', 'ai.admin', 'ai.assist'])).toBeUndefined();
  });

  it('refuses with 403 authz.scope_missing naming every scope that would do', () => {
    const one = refusal(['catalog.admin'])!;
    expect(one).toBeInstanceOf(AppError);
    expect([one.status, one.code, one.details]).toEqual([403, 'authz.scope_missing', { acceptedScopes: ['catalog.admin'] }]);
    expect(one.message).toBe('This operation needs the scope catalog.admin');
    const several = refusal(['ai.review', 'ai.admin'])!;
    expect(several.details).toEqual({ acceptedScopes: ['ai.review', 'ai.admin'] });
    expect(several.message).toBe('This operation needs one of the scopes ai.review, ai.admin');
  });

  it('does not read a scope out of a longer one: scopes are whole words', () => {
    const near = { ...principal, scopes: new Set(['catalog.readonly', 'ai']) };
    expect(() => requireAnyScope(near, ['catalog.read', 'ai.admin'])).toThrow(
      expect.objectContaining({ code: 'authz.scope_missing' }),
    );
  });
});
