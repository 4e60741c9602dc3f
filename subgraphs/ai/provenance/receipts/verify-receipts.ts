#!/usr/bin/env node
/**
 * The offline verifier of an AI provenance receipt export (docs/ai-gateway.md, "Receipts").
 *
 * One file on purpose: an auditor copies it alone and runs it without our server, with nothing
 * but `jose` and Node's built-ins (Node 22.18+ or 23.6+ run TypeScript as is):
 *
 *   npm install jose && node verify-receipts.ts EXPORT.jsonl [--jwks JWKS.json] [--output ID=TEXT_FILE]
 *
 * It checks every signature against the JWKS, the chain (sequence numbers without gap, in order,
 * each naming its predecessor's hash: no fork), the export's signed seal (nothing cut off at either
 * end), the exported rows against their signed claims, and optionally an output text against its
 * signed hash. It exits 0 when all hold, 1 naming the first broken link, 2 on a usage error.
 * So it stays one file, its pure part (verifyExport) and its command line share it; the server's
 * tests import verifyExport from here.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { compactVerify, decodeProtectedHeader, importJWK, type JWK } from 'jose';

/** Each broken link has its own code, the same in the server, its API and this verifier. */
export const BREAK_CODES = {
  malformed: 'receipt.malformed',
  unknownKid: 'receipt.unknown_kid',
  signatureInvalid: 'receipt.signature_invalid',
  gap: 'receipt.chain_gap',
  reordered: 'receipt.chain_reordered',
  fork: 'receipt.chain_fork',
  truncated: 'receipt.export_truncated',
  recordMismatch: 'receipt.record_mismatch',
  outputHashMismatch: 'receipt.output_hash_mismatch',
} as const;
export type BreakCode = (typeof BREAK_CODES)[keyof typeof BREAK_CODES];

export interface JsonWebKeySet {
  keys: JWK[];
}

/** One broken link: the first the verifier met, with the export line (1-based) it is on. */
export interface Break {
  ok: false;
  code: BreakCode;
  line: number;
  seq?: number;
  provenanceId?: string;
  message: string;
}

export interface Verified {
  ok: true;
  tenantId: string | null;
  count: number;
  firstSeq: number | null;
  lastSeq: number | null;
  /** The hash of the last receipt: compare with the tenant's chain head the server reports. */
  headHash: string | null;
  /** Output texts recomputed and matched, by provenance id. */
  outputsChecked: string[];
}

export interface VerifyOptions {
  /** Output texts to recompute the signed output hash of, by provenance id. */
  outputs?: Record<string, string>;
}

/** The claims the verifier reads; the others are signed and reported, not interpreted. */
interface Claims {
  v: number;
  provenanceId: string;
  tenantId: string;
  outputHash: string | null;
  seq: number;
  prev: string | null;
  [claim: string]: unknown;
}

interface ReceiptLine {
  line: number;
  jws: string;
  row: Record<string, unknown> | null;
  /** Read from the payload before its signature is checked, to look ahead for reordering. */
  claims: Claims;
}

interface Seal {
  line: number;
  jws: string;
}

export function sha256(text: string): string {
  return `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

// Fields declared apart from the constructor: Node's type stripping runs erasable syntax only.
class LinkBroken extends Error {
  readonly found: Break;
  constructor(found: Break) {
    super(found.message);
    this.found = found;
  }
}

function broken(code: BreakCode, line: number, message: string, claims?: Claims): never {
  throw new LinkBroken({ ok: false, code, line, seq: claims?.seq, provenanceId: claims?.provenanceId, message });
}

function decodePayload(jws: string, line: number): Claims {
  const parts = jws.split('.');
  if (parts.length !== 3) broken(BREAK_CODES.malformed, line, 'a receipt is not a compact JWS');
  let claims: Claims;
  try {
    claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as Claims;
  } catch {
    return broken(BREAK_CODES.malformed, line, 'a receipt payload is not JSON');
  }
  if (claims?.v !== 1 || !Number.isInteger(claims.seq) || typeof claims.tenantId !== 'string') {
    broken(BREAK_CODES.malformed, line, 'a receipt payload is not a version 1 receipt');
  }
  return claims;
}

/** Splits the export into its key set line (optional), receipt lines and seal line. */
function parseExport(lines: readonly string[]): { receipts: ReceiptLine[]; seal: Seal | null; keys: JsonWebKeySet | null } {
  const receipts: ReceiptLine[] = [];
  let seal: Seal | null = null;
  let keys: JsonWebKeySet | null = null;
  lines.forEach((text, index) => {
    const line = index + 1;
    if (text.trim() === '') return;
    let entry: { type?: unknown; receipt?: unknown; row?: unknown; seal?: unknown; jwks?: unknown };
    try {
      entry = JSON.parse(text) as typeof entry;
    } catch {
      return broken(BREAK_CODES.truncated, line, 'a line is not JSON (the export was cut mid-line?)');
    }
    if (seal) broken(BREAK_CODES.malformed, line, 'a line after the export seal');
    if (entry.type === 'keys') keys = entry.jwks as JsonWebKeySet;
    else if (entry.type === 'seal' && typeof entry.seal === 'string') seal = { line, jws: entry.seal };
    else if (entry.type === 'receipt' && typeof entry.receipt === 'string') {
      const row = entry.row && typeof entry.row === 'object' ? (entry.row as Record<string, unknown>) : null;
      receipts.push({ line, jws: entry.receipt, row, claims: decodePayload(entry.receipt, line) });
    } else broken(BREAK_CODES.malformed, line, 'a line that is neither a receipt, the keys nor the seal');
  });
  return { receipts, seal, keys };
}

/** Checks a JWS against the key set; answers its payload. */
async function verifySignature(jws: string, jwks: JsonWebKeySet, line: number, claims?: Claims): Promise<string> {
  let kid: string | undefined;
  try {
    kid = decodeProtectedHeader(jws).kid;
  } catch {
    return broken(BREAK_CODES.malformed, line, 'a JWS header that does not decode', claims);
  }
  const jwk = jwks.keys.find((key) => key.kid === kid);
  if (!kid || !jwk)
    return broken(BREAK_CODES.unknownKid, line, `signed with key "${kid ?? ''}", which the JWKS does not hold`, claims);
  try {
    const key = await importJWK({ ...jwk, alg: 'EdDSA' }, 'EdDSA');
    const { payload } = await compactVerify(jws, key, { algorithms: ['EdDSA'] });
    return new TextDecoder().decode(payload);
  } catch {
    return broken(BREAK_CODES.signatureInvalid, line, `the signature does not verify with key "${kid}"`, claims);
  }
}

/** Sequence and predecessor of one receipt against the one before it in the export. */
function checkLink(current: ReceiptLine, before: ReceiptLine | undefined, later: readonly ReceiptLine[]): void {
  const { claims, line } = current;
  if (!before) return;
  if (claims.tenantId !== before.claims.tenantId)
    broken(BREAK_CODES.malformed, line, 'receipts of two tenants in one export', claims);
  const expected = before.claims.seq + 1;
  if (claims.seq === before.claims.seq)
    broken(BREAK_CODES.fork, line, `a second receipt with sequence number ${claims.seq}`, claims);
  if (claims.seq < before.claims.seq) {
    broken(BREAK_CODES.reordered, line, `sequence number ${claims.seq} after ${before.claims.seq}`, claims);
  }
  if (claims.seq > expected) {
    const reordered = later.some((next) => next.claims.seq === expected);
    if (reordered) broken(BREAK_CODES.reordered, line, `sequence number ${claims.seq} before ${expected}`, claims);
    broken(
      BREAK_CODES.gap,
      line,
      `sequence number ${claims.seq} follows ${before.claims.seq}: ${claims.seq - expected} missing`,
      claims,
    );
  }
  if (claims.prev !== sha256(before.jws)) {
    broken(BREAK_CODES.fork, line, `receipt ${claims.seq} names a predecessor other than receipt ${before.claims.seq}`, claims);
  }
}

/** The exported row as it is now against what was signed (an erased row is exported as null). */
function checkRow(current: ReceiptLine): void {
  if (!current.row) return;
  for (const [name, value] of Object.entries(current.row)) {
    if (JSON.stringify(value) !== JSON.stringify(current.claims[name])) {
      broken(BREAK_CODES.recordMismatch, current.line, `the row's ${name} differs from the signed one`, current.claims);
    }
  }
}

function checkOutput(current: ReceiptLine, outputs: Record<string, string>, checked: string[]): void {
  const text = outputs[current.claims.provenanceId];
  if (text === undefined) return;
  if (sha256(text) !== current.claims.outputHash) {
    broken(
      BREAK_CODES.outputHashMismatch,
      current.line,
      'the supplied output text does not hash to the signed output hash',
      current.claims,
    );
  }
  checked.push(current.claims.provenanceId);
}

interface SealClaims {
  tenantId: string;
  count: number;
  firstSeq: number | null;
  lastSeq: number | null;
  lastHash: string | null;
}

/** The signed seal says how many receipts the export holds and which is last: a cut export fails it. */
async function checkSeal(
  seal: Seal | null,
  receipts: readonly ReceiptLine[],
  jwks: JsonWebKeySet,
  lastLine: number,
): Promise<void> {
  if (!seal) return broken(BREAK_CODES.truncated, lastLine, 'the export has no seal line: it was cut off');
  const sealed = JSON.parse(await verifySignature(seal.jws, jwks, seal.line)) as SealClaims;
  const first = receipts[0];
  const last = receipts.at(-1);
  const holds =
    sealed.count === receipts.length &&
    sealed.firstSeq === (first?.claims.seq ?? null) &&
    sealed.lastSeq === (last?.claims.seq ?? null) &&
    sealed.lastHash === (last ? sha256(last.jws) : null) &&
    (!first || sealed.tenantId === first.claims.tenantId);
  if (!holds) {
    broken(
      BREAK_CODES.truncated,
      seal.line,
      `the seal covers ${sealed.count} receipts (${sealed.firstSeq}..${sealed.lastSeq}); the export holds ${receipts.length}`,
    );
  }
}

/**
 * Verifies an export's lines against a JWKS (or, lacking one, the key set the export carries).
 * Answers the first broken link, in export order; every check of a line comes before the next line's.
 */
export async function verifyExport(
  lines: readonly string[],
  jwks?: JsonWebKeySet,
  options: VerifyOptions = {},
): Promise<Verified | Break> {
  try {
    const { receipts, seal, keys } = parseExport(lines);
    const keySet = jwks ?? keys;
    if (!keySet) return broken(BREAK_CODES.unknownKid, 1, 'no JWKS given and none in the export');
    const checked: string[] = [];
    for (const [index, current] of receipts.entries()) {
      const payload = await verifySignature(current.jws, keySet, current.line, current.claims);
      current.claims = JSON.parse(payload) as Claims;
      checkLink(current, receipts[index - 1], receipts.slice(index + 1));
      checkRow(current);
      checkOutput(current, options.outputs ?? {}, checked);
    }
    await checkSeal(seal, receipts, keySet, receipts.at(-1)?.line ?? lines.length);
    const last = receipts.at(-1);
    return {
      ok: true,
      tenantId: receipts[0]?.claims.tenantId ?? null,
      count: receipts.length,
      firstSeq: receipts[0]?.claims.seq ?? null,
      lastSeq: last?.claims.seq ?? null,
      headHash: last ? sha256(last.jws) : null,
      outputsChecked: checked,
    };
  } catch (error) {
    if (error instanceof LinkBroken) return error.found;
    throw error;
  }
}

interface Arguments {
  file: string;
  jwks?: string;
  outputs: Record<string, string>;
}

function parseArguments(argv: readonly string[]): Arguments {
  const args: Arguments = { file: '', outputs: {} };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--jwks') args.jwks = argv[++i];
    else if (arg === '--output') {
      const [id, file] = (argv[++i] ?? '').split(/=(.*)/s);
      if (!id || !file) throw new Error('--output takes PROVENANCE_ID=TEXT_FILE');
      args.outputs[id] = readFileSync(file, 'utf8');
    } else if (!args.file) args.file = arg;
    else throw new Error(`unexpected argument ${arg}`);
  }
  if (!args.file || (argv.includes('--jwks') && !args.jwks))
    throw new Error('usage: verify-receipts EXPORT.jsonl [--jwks JWKS.json] [--output ID=TEXT_FILE]');
  return args;
}

export async function main(argv: readonly string[]): Promise<number> {
  let args: Arguments;
  try {
    args = parseArguments(argv);
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  const lines = readFileSync(args.file, 'utf8').split('\n');
  const jwks = args.jwks ? (JSON.parse(readFileSync(args.jwks, 'utf8')) as JsonWebKeySet) : undefined;
  if (!jwks)
    console.error('warning: no --jwks: the keys the export carries are used; for an independent check pass the published JWKS');
  const result = await verifyExport(lines, jwks, { outputs: args.outputs });
  if (!result.ok) {
    const at = result.seq === undefined ? '' : ` (receipt ${result.seq}, provenance ${result.provenanceId})`;
    console.error(`${result.code} at line ${result.line}${at}: ${result.message}`);
    return 1;
  }
  console.log(
    `ok: ${result.count} receipts of tenant ${result.tenantId}, sequence ${result.firstSeq}..${result.lastSeq}, head ${result.headHash}` +
      (result.outputsChecked.length ? `; outputs matched: ${result.outputsChecked.join(', ')}` : ''),
  );
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
