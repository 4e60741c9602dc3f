import type { JWK } from 'jose';

/**
 * The receipt signing secret in the vault, at RECEIPT_KEYS_PATH: the active key's id, every
 * private key kept there (`key:<kid>`, a private Ed25519 JWK as JSON) and the key of reviewer
 * pseudonyms, which outlives rotations so one reviewer keeps one pseudonym.
 */
export const RECEIPT_KEYS_PATH = 'ai/receipts/signing';

export interface SigningSecret {
  activeKid: string;
  activeJwk: JWK;
  pseudonymKey: string;
}

const keyField = (kid: string) => `key:${kid}`;

/** The active key and pseudonym key, or undefined when none was provisioned yet. Throws on a broken secret. */
export function parseSigningSecret(secret: Record<string, string> | undefined): SigningSecret | undefined {
  const activeKid = secret?.active;
  if (!secret || !activeKid) return undefined;
  const raw = secret[keyField(activeKid)];
  const pseudonymKey = secret.pseudonym_key;
  if (!raw || !pseudonymKey) throw new TypeError(`the receipt signing secret lacks the key "${activeKid}" or its pseudonym key`);
  return { activeKid, activeJwk: JSON.parse(raw) as JWK, pseudonymKey };
}

/** The secret with a new active key added; earlier keys stay (a rotation loses nothing). */
export function withActiveKey(
  secret: Record<string, string> | undefined,
  privateJwk: JWK,
  newPseudonymKey: string,
): Record<string, string> {
  const kid = privateJwk.kid!;
  return {
    ...secret,
    active: kid,
    pseudonym_key: secret?.pseudonym_key ?? newPseudonymKey,
    [keyField(kid)]: JSON.stringify(privateJwk),
  };
}

/** A key id that sorts by creation and names the day: `r-20261128-1a2b3c4d`. */
export function newKid(now: Date, randomHex: string): string {
  return `r-${now.toISOString().slice(0, 10).replaceAll('-', '')}-${randomHex}`;
}
