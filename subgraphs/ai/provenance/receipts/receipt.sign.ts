import { CompactSign, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK, type KeyObject } from 'jose';
import { canonicalJson } from '../../../../platform/text/canonical-json.js';

/** A private signing key as the vault holds it and the public half the JWKS serves. */
export interface SigningKey {
  kid: string;
  privateKey: CryptoKey | KeyObject;
  publicJwk: JWK;
}

/** The JWS header of every receipt and seal: EdDSA (Ed25519) and the signing key's id. */
const TYPE = 'receipt+jws';

/** Signs the RFC 8785 canonical JSON of `claims` as a compact JWS naming the key. */
export async function signCanonical(claims: unknown, key: SigningKey): Promise<string> {
  return new CompactSign(new TextEncoder().encode(canonicalJson(claims)))
    .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: TYPE })
    .sign(key.privateKey);
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
  if (!privateJwk.kid || privateJwk.kty !== 'OKP' || privateJwk.crv !== 'Ed25519' || !privateJwk.d) {
    throw new TypeError('a receipt signing key is an Ed25519 private JWK with a kid');
  }
  const privateKey = await importJWK({ ...privateJwk, alg: 'EdDSA' }, 'EdDSA');
  if (privateKey instanceof Uint8Array) throw new TypeError('a receipt signing key is not a symmetric key');
  return { kid: privateJwk.kid, privateKey, publicJwk: publicHalf(privateJwk) };
}
