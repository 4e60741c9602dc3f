import { canonicalHash, canonicalJson, hmacSha256Hex, sha256Hex } from '../../../../platform/text/canonical-json.js';

/**
 * A receipt is a JWS (EdDSA) over the RFC 8785 canonical JSON of these claims: what an auditor
 * needs to prove, long after, that an output came from a given template, rule, model, residency
 * and review decision, and that no receipt of the tenant was removed (seq + prev chain every
 * receipt of a tenant into one line). Only ids, versions and hashes: an erased text leaves its
 * receipt verifiable.
 */
/** What a provenance row and a receipt both name, under the same names. */
interface CoveredFields {
  featureKey: string;
  mode: string;
  status: string;
  templateId: string | null;
  templateVersion: number | null;
  templateHash: string | null;
  ruleId: string | null;
  ruleVersion: number | null;
  residency: string | null;
  provider: string | null;
  model: string | null;
}

export interface ReceiptClaims extends CoveredFields {
  /** Claims format; a verifier refuses a version it does not know. */
  v: 1;
  /** What was recorded: the first record of an answer, or a later review decision on it. */
  event: ReceiptEvent;
  provenanceId: string;
  tenantId: string;
  /** Hash of the rendered prompt (the model's input). */
  inputHash: string | null;
  outputHash: string | null;
  moderation: { verdict: ModerationVerdict; hash: string | null };
  review: { state: string | null; decision: string | null; reviewer: string | null; releasedTextHash: string | null };
  createdAt: string;
  completedAt: string | null;
  signedAt: string;
  /** 1, 2, 3… per tenant, without gaps. */
  seq: number;
  /** The previous receipt's hash (receiptHash), null for seq 1. */
  prev: string | null;
}

export type ReceiptEvent = 'assist' | 'shadow' | 'backfill' | 'review';
export type ModerationVerdict = 'not_run' | 'passed' | 'flagged' | 'bypassed';

/** The fields of a provenance row a receipt covers (a ProvenanceRecord or a stored row). */
export interface ReceiptSubject extends CoveredFields {
  id: string;
  tenantId: string;
  renderedPromptHash: string | null;
  outputHash: string | null;
  moderation: unknown;
  reviewState: string | null;
  review: unknown;
  createdAt: Date;
  completedAt: Date | null;
}

/** Where a new receipt goes in its tenant's chain. */
export interface ChainLink {
  seq: number;
  prev: string | null;
}

/** A tenant's chain head as stored: the last receipt's sequence number and hash (none yet: seq 0). */
export interface ChainHead {
  seq: number;
  hash: string | null;
}

export function nextLink(head: ChainHead): ChainLink {
  return { seq: head.seq + 1, prev: head.hash };
}

/** The hash the next receipt names as `prev`: of the compact JWS as stored and exported. */
export function receiptHash(jws: string): string {
  return `sha256:${sha256Hex(jws)}`;
}

/**
 * A reviewer named without naming them: HMAC-SHA-256 of the subject under a secret of the
 * gateway, so one reviewer's decisions correlate while the receipt says nothing of who they are
 * (the key holder, the data-protection officer, can confirm a given person).
 */
export function pseudonymousReviewer(subject: string, key: string): string {
  return `hmac-sha256:${hmacSha256Hex(key, subject)}`;
}

/** A summary an auditor reads without the moderation detail, plus the hash of that detail. */
export function moderationVerdict(moderation: unknown): ModerationVerdict {
  if (moderation === null || moderation === undefined) return 'not_run';
  const text = JSON.stringify(moderation);
  if (/"bypassedByFlag":true/.test(text)) return 'bypassed';
  if (/"flagged":true/.test(text) || /"outcome":"content_filter"/.test(text)) return 'flagged';
  return 'passed';
}

interface ReviewFacts {
  decision?: unknown;
  decidedBy?: unknown;
  releasedTextHash?: unknown;
}

function reviewClaims(subject: ReceiptSubject, reviewerKey: string): ReceiptClaims['review'] {
  const facts = (subject.review ?? {}) as ReviewFacts;
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  const decidedBy = text(facts.decidedBy);
  return {
    state: subject.reviewState,
    decision: text(facts.decision),
    reviewer: decidedBy === null ? null : pseudonymousReviewer(decidedBy, reviewerKey),
    releasedTextHash: text(facts.releasedTextHash),
  };
}

/** The claims of one receipt: the subject's covered fields, its place in the chain, the signing time. */
export function receiptClaims(
  subject: ReceiptSubject,
  event: ReceiptEvent,
  link: ChainLink,
  context: { signedAt: Date; reviewerKey: string },
): ReceiptClaims {
  return {
    v: 1,
    event,
    provenanceId: subject.id,
    tenantId: subject.tenantId,
    featureKey: subject.featureKey,
    mode: subject.mode,
    status: subject.status,
    templateId: subject.templateId,
    templateVersion: subject.templateVersion,
    templateHash: subject.templateHash,
    ruleId: subject.ruleId,
    ruleVersion: subject.ruleVersion,
    residency: subject.residency,
    provider: subject.provider,
    model: subject.model,
    inputHash: subject.renderedPromptHash,
    outputHash: subject.outputHash,
    moderation: {
      verdict: moderationVerdict(subject.moderation),
      hash:
        subject.moderation === null || subject.moderation === undefined ? null : `sha256:${canonicalHash(subject.moderation)}`,
    },
    review: reviewClaims(subject, context.reviewerKey),
    createdAt: subject.createdAt.toISOString(),
    completedAt: subject.completedAt ? subject.completedAt.toISOString() : null,
    signedAt: context.signedAt.toISOString(),
    seq: link.seq,
    prev: link.prev,
  };
}

/** The bytes a receipt signs. */
export function receiptPayload(claims: ReceiptClaims): string {
  return canonicalJson(claims);
}

/**
 * Which claims an exported provenance row must still match: the ones the row holds itself
 * (chain, signing time and review pseudonym are the receipt's own). An export line carries the row
 * as it is now, so an edited row shows against its signed claims.
 */
export const ROW_BOUND_CLAIMS = [
  'provenanceId',
  'tenantId',
  'featureKey',
  'mode',
  'templateId',
  'templateVersion',
  'templateHash',
  'ruleId',
  'ruleVersion',
  'residency',
  'provider',
  'model',
  'inputHash',
  'outputHash',
  'createdAt',
] as const satisfies ReadonlyArray<keyof ReceiptClaims>;
