import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { canonicalJson } from '../../../../platform/text/canonical-json.js';

/** A private signing key as the vault holds it and the public half the JWKS serves. */
export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  publicJwk: JWK;
}

/** The JWS header of every receipt and seal: EdDSA (Ed25519) and the signing key's id. */
const TYPE = 'receipt+jws';

/**
 * Signs the RFC 8785 canonical JSON of `claims` as a compact JWS (RFC 7515) naming the key.
 * Built here with node:crypto's synchronous Ed25519 rather than jose's WebCrypto signing: a hot
 * tenant's receipts are signed one after another (each names the hash of the one before), and
 * WebCrypto's sign is a thread-pool job per receipt, each waiting for a time slice on a loaded
 * machine (bench/README.md, receipts). Verification stays with jose.
 */
export async function signCanonical(claims: unknown, key: SigningKey): Promise<string> {
  const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid: key.kid, typ: TYPE })).toString('base64url');
  const signingInput = `${header}.${Buffer.from(canonicalJson(claims)).toString('base64url')}`;
  return `${signingInput}.${sign(null, Buffer.from(signingInput), key.privateKey).toString('base64url')}`;
}

/** A new Ed25519 key: its private JWK (for the vault) and public JWK (for the JWKS), under `kid`. */
export async function newSigningKey(kid: string): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: 'EdDSA', use: 'sig' };
  return { privateJwk, publicJwk: publicHalf(privateJwk) };
}

/** The public members of an OKP key (never `d`). */
export function publicHalf(jwk: JWK): JWK {
  return { kty: jwk.kty, crv: jwk.crv, x: jwk.x, kid: jwk.kid, alg: 'EdDSA', use: 'sig' };
}

export async function signingKeyOf(privateJwk: JWK): Promise<SigningKey> {
  if (!privateJwk.kid || privateJwk.kty !== 'OKP' || privateJwk.crv !== 'Ed25519' || !privateJwk.d || !privateJwk.x) {
    throw new TypeError('a receipt signing key is an Ed25519 private JWK with a kid');
  }
  const privateKey = createPrivateKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: privateJwk.x, d: privateJwk.d },
    format: 'jwk',
  });
  return { kid: privateJwk.kid, privateKey, publicJwk: publicHalf(privateJwk) };
}
