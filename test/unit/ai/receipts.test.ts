import canonicalize from 'canonicalize';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  receiptClaims,
  receiptHash,
  receiptPayload,
  pseudonymousReviewer,
  moderationVerdict,
  nextLink,
} from '../../../subgraphs/ai/provenance/receipts/receipt.logic.js';
import { newKid, parseSigningSecret, withActiveKey } from '../../../subgraphs/ai/provenance/receipts/receipt-keys.logic.js';
import { newSigningKey, signCanonical } from '../../../subgraphs/ai/provenance/receipts/receipt.sign.js';
import { BREAK_CODES, main, verifyExport, type Break } from '../../../subgraphs/ai/provenance/receipts/verify-receipts.js';
import { exportOf, signedChain, subject, testKey } from '../../support/receipt-chain.js';

const context = { signedAt: new Date('2026-11-01T00:10:00Z'), reviewerKey: 'pseudonym-key' };

describe('receipt claims', () => {
  it('sign hashes and ids only: no text of the input, output or reviewer', () => {
    const row = subject(1, {
      review: { decision: 'approved', decidedBy: 'dr.jones@hospital.example', releasedTextHash: 'sha256:r' },
      reviewState: 'approved',
      moderation: { required: true, input: { flagged: false } },
    });
    const payload = receiptPayload(receiptClaims(row, 'review', { seq: 4, prev: 'sha256:p' }, context));
    expect(payload).not.toContain('dr.jones');
    expect(payload).not.toContain('output 1');
    const claims = JSON.parse(payload);
    expect(claims).toMatchObject({
      seq: 4,
      prev: 'sha256:p',
      event: 'review',
      outputHash: row.outputHash,
      inputHash: row.renderedPromptHash,
    });
    expect(claims.review.reviewer).toBe(pseudonymousReviewer('dr.jones@hospital.example', 'pseudonym-key'));
    expect(claims.moderation.verdict).toBe('passed');
  });

  it('is RFC 8785 canonical JSON whatever the order the row was built in', () => {
    const row = subject(2);
    const shuffled = Object.fromEntries(Object.entries(row).reverse()) as typeof row;
    const a = receiptPayload(receiptClaims(row, 'assist', { seq: 1, prev: null }, context));
    const b = receiptPayload(receiptClaims(shuffled, 'assist', { seq: 1, prev: null }, context));
    expect(a).toBe(b);
    expect(a).toBe(canonicalize(JSON.parse(a)));
  });

  it('names reviewers by a keyed hash: stable per key, different across keys and reviewers', () => {
    expect(pseudonymousReviewer('r1', 'k')).toBe(pseudonymousReviewer('r1', 'k'));
    expect(pseudonymousReviewer('r1', 'k')).not.toBe(pseudonymousReviewer('r2', 'k'));
    expect(pseudonymousReviewer('r1', 'k')).not.toBe(pseudonymousReviewer('r1', 'other'));
  });

  it('summarises moderation', () => {
    expect(moderationVerdict(null)).toBe('not_run');
    expect(moderationVerdict({ required: true, bypassedByFlag: true })).toBe('bypassed');
    expect(moderationVerdict({ required: true, output: { flagged: true } })).toBe('flagged');
    expect(moderationVerdict({ source: 'provider', outcome: 'content_filter' })).toBe('flagged');
  });

  it('links each receipt to its tenant head', () => {
    expect(nextLink({ seq: 0, hash: null })).toEqual({ seq: 1, prev: null });
    expect(nextLink({ seq: 7, hash: 'sha256:h' })).toEqual({ seq: 8, prev: 'sha256:h' });
  });
});

async function tampered(edit: (lines: string[]) => string[] | Promise<string[]>, count = 5): Promise<Break> {
  const key = await testKey();
  const { receipts, rows } = await signedChain(key, count);
  const lines = await edit(await exportOf(key, receipts, rows));
  const result = await verifyExport(lines, { keys: [key.publicJwk] });
  if (result.ok) throw new Error('the tampered export verified');
  return result;
}

const parsed = (line: string) => JSON.parse(line) as { receipt: string; row: Record<string, unknown> | null; seq: number };

describe('verifyExport', () => {
  it('accepts an untouched chain and reports its head', async () => {
    const key = await testKey();
    const { receipts, rows } = await signedChain(key, 5);
    const result = await verifyExport(await exportOf(key, receipts, rows), { keys: [key.publicJwk] });
    expect(result).toMatchObject({ ok: true, count: 5, firstSeq: 1, lastSeq: 5, headHash: receiptHash(receipts[4].jws) });
  });

  it('accepts an erased row: the receipt alone still verifies', async () => {
    const key = await testKey();
    const { receipts, rows } = await signedChain(key, 3);
    const result = await verifyExport(await exportOf(key, receipts, [rows[0], null, rows[2]]), { keys: [key.publicJwk] });
    expect(result.ok).toBe(true);
  });

  it('catches an edited provenance row', async () => {
    const found = await tampered((lines) => {
      const line = parsed(lines[2]);
      line.row!.model = 'a-bigger-model';
      return lines.with(2, JSON.stringify(line));
    });
    expect(found).toMatchObject({ code: BREAK_CODES.recordMismatch, line: 3, seq: 2 });
  });

  it('catches a deleted receipt', async () => {
    const found = await tampered((lines) => lines.toSpliced(3, 1));
    expect(found).toMatchObject({ code: BREAK_CODES.gap, seq: 4 });
  });

  it('catches two reordered receipts', async () => {
    const found = await tampered((lines) => lines.with(2, lines[3]).with(3, lines[2]));
    expect(found).toMatchObject({ code: BREAK_CODES.reordered, line: 3, seq: 3 });
  });

  it('catches a receipt re-signed with a key the JWKS does not hold', async () => {
    const intruder = await testKey('k-intruder');
    const found = await tampered(async (lines) => {
      const line = parsed(lines[2]);
      const claims = JSON.parse(Buffer.from(line.receipt.split('.')[1], 'base64url').toString());
      line.receipt = await signCanonical({ ...claims, model: 'other' }, intruder);
      return lines.with(2, JSON.stringify(line));
    });
    expect(found).toMatchObject({ code: BREAK_CODES.unknownKid, line: 3 });
  });

  it('catches a receipt re-signed under a known kid with another key', async () => {
    const forger = await testKey('k-test');
    const found = await tampered(async (lines) => {
      const line = parsed(lines[2]);
      const claims = JSON.parse(Buffer.from(line.receipt.split('.')[1], 'base64url').toString());
      line.receipt = await signCanonical(claims, forger);
      return lines.with(2, JSON.stringify(line));
    });
    expect(found).toMatchObject({ code: BREAK_CODES.signatureInvalid, line: 3 });
  });

  it('catches an edited payload under the original signature', async () => {
    const found = await tampered((lines) => {
      const line = parsed(lines[2]);
      const [header, payload, signature] = line.receipt.split('.');
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
      const forged = Buffer.from(JSON.stringify({ ...claims, outputHash: 'sha256:other' })).toString('base64url');
      line.receipt = [header, forged, signature].join('.');
      return lines.with(2, JSON.stringify(line));
    });
    expect(found.code).toBe(BREAK_CODES.signatureInvalid);
  });

  it('catches a truncated export, at the end, mid-line and at the start', async () => {
    expect((await tampered((lines) => lines.slice(0, -2))).code).toBe(BREAK_CODES.truncated);
    expect((await tampered((lines) => [...lines.slice(0, -1), lines.at(-1)!.slice(0, 40)])).code).toBe(BREAK_CODES.truncated);
    expect((await tampered((lines) => [lines[0], ...lines.slice(2)])).code).toBe(BREAK_CODES.truncated);
  });

  it('catches a fork: two receipts claiming one place in the chain', async () => {
    const key = await testKey();
    const { receipts, rows } = await signedChain(key, 3);
    const rival = await signCanonical(
      receiptClaims(subject(9), 'assist', nextLink({ seq: 2, hash: receiptHash(receipts[1].jws) }), context),
      key,
    );
    const forked = [...receipts, { seq: 3, jws: rival }];
    const result = await verifyExport(await exportOf(key, forked, [...rows, subject(9)]), { keys: [key.publicJwk] });
    expect(result).toMatchObject({ ok: false, code: BREAK_CODES.fork, seq: 3, line: 5 });
  });

  it('catches a receipt naming a predecessor other than the one before it', async () => {
    const key = await testKey();
    const { receipts, rows } = await signedChain(key, 2);
    const stray = await signCanonical(receiptClaims(subject(3), 'assist', { seq: 3, prev: 'sha256:elsewhere' }, context), key);
    const result = await verifyExport(await exportOf(key, [...receipts, { seq: 3, jws: stray }], [...rows, subject(3)]), {
      keys: [key.publicJwk],
    });
    expect(result).toMatchObject({ ok: false, code: BREAK_CODES.fork, seq: 3 });
  });

  it('recomputes an output hash from a supplied text', async () => {
    const key = await testKey();
    const { receipts, rows } = await signedChain(key, 3);
    const lines = await exportOf(key, receipts, rows);
    const jwks = { keys: [key.publicJwk] };
    expect(await verifyExport(lines, jwks, { outputs: { 'prov-2': 'output 2' } })).toMatchObject({
      ok: true,
      outputsChecked: ['prov-2'],
    });
    expect(await verifyExport(lines, jwks, { outputs: { 'prov-2': 'output 2, edited' } })).toMatchObject({
      ok: false,
      code: BREAK_CODES.outputHashMismatch,
      provenanceId: 'prov-2',
    });
  });

  it('uses the export’s own key set when no JWKS is given, and refuses a receipt with none', async () => {
    const key = await testKey();
    const { receipts, rows } = await signedChain(key, 2);
    const lines = await exportOf(key, receipts, rows);
    expect((await verifyExport(lines)).ok).toBe(true);
    expect(await verifyExport(lines.slice(1))).toMatchObject({ ok: false, code: BREAK_CODES.unknownKid });
  });
});

describe('the verifier command line', () => {
  async function files(lines: string[], jwks: object): Promise<{ exportFile: string; jwksFile: string; dir: string }> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'receipts-cli-'));
    const exportFile = path.join(dir, 'export.jsonl');
    const jwksFile = path.join(dir, 'jwks.json');
    await fs.writeFile(exportFile, `${lines.join('\n')}\n`);
    await fs.writeFile(jwksFile, JSON.stringify(jwks));
    return { exportFile, jwksFile, dir };
  }

  it('exits 0 on a sound export, 1 naming the first broken link, 2 on a usage error', async () => {
    const key = await testKey();
    const { receipts, rows } = await signedChain(key, 3);
    const lines = await exportOf(key, receipts, rows);
    const sound = await files(lines, { keys: [key.publicJwk] });
    const cut = await files(lines.slice(0, -1), { keys: [key.publicJwk] });
    const errors: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((message: string) => void errors.push(message));
    vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      expect(await main([sound.exportFile, '--jwks', sound.jwksFile])).toBe(0);
      expect(await main([cut.exportFile, '--jwks', cut.jwksFile])).toBe(1);
      expect(errors.at(-1)).toMatch(/^receipt\.export_truncated at line 4/);
      expect(await main([])).toBe(2);
    } finally {
      spy.mockRestore();
      vi.restoreAllMocks();
      await fs.rm(sound.dir, { recursive: true });
      await fs.rm(cut.dir, { recursive: true });
    }
  });
});

describe('the signing secret in the vault', () => {
  it('is absent until provisioned, then names its active key; a rotation keeps earlier keys and the pseudonym key', async () => {
    expect(parseSigningSecret(undefined)).toBeUndefined();
    const first = (await newSigningKey('r-1')).privateJwk;
    const once = withActiveKey(undefined, first, 'pseudo-1');
    expect(parseSigningSecret(once)).toMatchObject({ activeKid: 'r-1', pseudonymKey: 'pseudo-1', activeJwk: { kid: 'r-1' } });
    const second = (await newSigningKey('r-2')).privateJwk;
    const twice = withActiveKey(once, second, 'pseudo-2');
    expect(parseSigningSecret(twice)).toMatchObject({ activeKid: 'r-2', pseudonymKey: 'pseudo-1' });
    expect(Object.keys(twice).filter((field) => field.startsWith('key:'))).toEqual(['key:r-1', 'key:r-2']);
  });

  it('refuses a secret naming a key it does not hold', () => {
    expect(() => parseSigningSecret({ active: 'r-9', pseudonym_key: 'p' })).toThrow(/r-9/);
  });

  it('names keys by day and randomness, and never publishes the private part', async () => {
    expect(newKid(new Date('2026-11-28T04:00:00Z'), '0a1b2c3d')).toBe('r-20261128-0a1b2c3d');
    const { privateJwk, publicJwk } = await newSigningKey('r-3');
    expect(privateJwk.d).toEqual(expect.any(String));
    expect(publicJwk).not.toHaveProperty('d');
    expect(publicJwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519', kid: 'r-3', alg: 'EdDSA' });
  });
});
