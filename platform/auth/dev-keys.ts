import fs from 'node:fs/promises';
import path from 'node:path';
import { exportJWK, exportSPKI, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { newUlid } from '../ids.js';

/**
 * The embedded default: an Ed25519 key pair generated once under DATA_DIR, so a fresh machine can
 * start and mint tokens with no identity provider. Never used when AUTH_JWKS_URL or
 * AUTH_PUBLIC_KEY is set.
 */
export interface DevKeyPair {
  privateJwk: JWK;
  publicJwk: JWK;
  publicPem: string;
}

export async function ensureDevKeyPair(dataDir: string): Promise<DevKeyPair> {
  const dir = path.join(dataDir, 'dev-keys');
  const file = path.join(dir, 'ed25519.json');
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as DevKeyPair;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const pair = await generateEd25519();
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  // Another process may have won the race; whoever wrote first is kept.
  await fs.writeFile(file, JSON.stringify(pair), { mode: 0o600, flag: 'wx' }).catch(async (error) => {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  });
  return JSON.parse(await fs.readFile(file, 'utf8')) as DevKeyPair;
}

export async function generateEd25519(): Promise<DevKeyPair> {
  const { privateKey, publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const kid = newUlid();
  return {
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'EdDSA' },
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'EdDSA' },
    publicPem: await exportSPKI(publicKey),
  };
}

/**
 * A token living exactly `ttlSeconds` (900 by default, the most the verifier accepts). `iat` and
 * `exp` come from one reading of the clock: jose's `setIssuedAt()` and `setExpirationTime('900s')`
 * each read it, and a token minted across a second boundary lived 901 s and was refused (seen in
 * CI as one 401 among thousands of writes).
 */
export async function mintToken(
  privateJwk: JWK,
  claims: { sub: string; tid: string; scope: string; ttlSeconds?: number; extra?: Record<string, unknown> },
): Promise<string> {
  const key = await importJWK(privateJwk, 'EdDSA');
  const issuedAt = Math.floor(Date.now() / 1000);
  return new SignJWT({ tid: claims.tid, scope: claims.scope, ...claims.extra })
    .setProtectedHeader({ alg: 'EdDSA', kid: privateJwk.kid, typ: 'JWT' })
    .setSubject(claims.sub)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + (claims.ttlSeconds ?? 900))
    .sign(key);
}
