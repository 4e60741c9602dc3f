import { randomBytes } from 'node:crypto';
import type { JWK } from 'jose';
import type { Clock } from '../../../../platform/clock.js';
import type { Db } from '../../../../platform/db/database.js';
import { AppError } from '../../../../platform/errors/errors.js';
import type { CachedSecrets, SecretStore } from '../../vault/secrets.js';
import { newKid, parseSigningSecret, RECEIPT_KEYS_PATH, withActiveKey } from './receipt-keys.logic.js';
import { newSigningKey, signingKeyOf, type SigningKey } from './receipt.sign.js';

/** What signs a receipt: the active key, and the key of reviewer pseudonyms. */
export interface ReceiptSigner {
  key: SigningKey;
  pseudonymKey: string;
}

export interface ReceiptKeys {
  /** The active signer; its public key is in the JWKS before anything is signed with it. */
  signer(): Promise<ReceiptSigner>;
  /** A new active key in the vault; earlier keys stay in the JWKS. */
  rotate(): Promise<{ kid: string }>;
  /** Every public key that ever signed, oldest first. */
  jwks(): Promise<{ keys: JWK[] }>;
}

export interface ReceiptKeyDeps {
  db: Db;
  store: SecretStore;
  secrets: CachedSecrets;
  clock: Clock;
}

function unavailable(cause: unknown): AppError {
  return new AppError('receipt.signing_unavailable', 'the receipt signing key is unavailable', {
    cause,
    headers: { 'retry-after': '5' },
  });
}

/**
 * Receipt signing keys: private halves in the gateway's vault (the one provider keys come from),
 * public halves in the database, so any replica serves every key that ever signed, whichever vault
 * version it reads. The first signature of a gateway with no key provisions one; two replicas
 * racing to do so both register their public key before signing, so both keys verify.
 */
export function createReceiptKeys(deps: ReceiptKeyDeps): ReceiptKeys {
  const imported = new Map<string, Promise<SigningKey>>();
  const registered = new Map<string, Promise<void>>();
  let provisioning: Promise<string> | null = null;

  const register = (key: SigningKey) => {
    let done = registered.get(key.kid);
    if (!done) {
      done = deps.db.receiptSigningKey
        .createMany({ data: [{ kid: key.kid, publicJwk: key.publicJwk as object }], skipDuplicates: true })
        .then(() => undefined);
      done.catch(() => registered.delete(key.kid));
      registered.set(key.kid, done);
    }
    return done;
  };

  const keyOf = (jwk: JWK) => {
    let key = imported.get(jwk.kid!);
    if (!key) {
      key = signingKeyOf(jwk);
      imported.set(jwk.kid!, key);
    }
    return key;
  };

  const addKey = async (): Promise<string> => {
    if (!deps.store.write) throw new Error('the secret store cannot be written');
    const { privateJwk } = await newSigningKey(newKid(deps.clock.now(), randomBytes(4).toString('hex')));
    const current = await deps.store.read(RECEIPT_KEYS_PATH);
    await register(await keyOf(privateJwk));
    await deps.store.write(RECEIPT_KEYS_PATH, withActiveKey(current, privateJwk, randomBytes(32).toString('hex')));
    deps.secrets.invalidate(RECEIPT_KEYS_PATH);
    return privateJwk.kid!;
  };

  const signer = async (): Promise<ReceiptSigner> => {
    try {
      let secret = parseSigningSecret(await deps.secrets.read(RECEIPT_KEYS_PATH));
      if (!secret) {
        // One provisioning per process at a time; another process's may win the vault, whose key is
        // then the one read back (its public half registered before it was written).
        provisioning ??= addKey().finally(() => (provisioning = null));
        await provisioning;
        secret = parseSigningSecret(await deps.secrets.read(RECEIPT_KEYS_PATH))!;
      }
      const key = await keyOf(secret.activeJwk);
      await register(key);
      return { key, pseudonymKey: secret.pseudonymKey };
    } catch (error) {
      throw unavailable(error);
    }
  };

  return {
    signer,
    async rotate() {
      try {
        return { kid: await addKey() };
      } catch (error) {
        throw unavailable(error);
      }
    },
    async jwks() {
      const rows = await deps.db.receiptSigningKey.findMany({ orderBy: [{ createdAt: 'asc' }, { kid: 'asc' }] });
      return { keys: rows.map((row) => row.publicJwk as JWK) };
    },
  };
}
