import type { EventProducer } from '../../../events/publish/outbox.js';
import type { ReceiptWriter } from '../provenance/receipts/receipt.repo.js';
import type { Logger } from '../../../platform/observability/logger.js';
import type { ReviewTask as TaskRow } from '../../../prisma/generated/client.js';
import type { ChangeStore } from '../audit/audited-change.js';
import type { AdminCaller } from '../admin-caller.js';
import type { ReviewDecision } from './review.logic.js';

/** What the review operations are made of. */
export interface ReviewDeps extends ChangeStore {
  events: EventProducer;
  /** AI_REVIEW_CLAIM_MINUTES: how long a claim holds. */
  claimMinutes: number;
  /** AI_REVIEW_TEXT_RETENTION_HOURS: how long released text is kept from the decision on. */
  retentionHours: number;
  /** Drops the assist snapshot cache (a HITL policy changed). */
  onChange: () => void;
  logger: Logger;
  /** A decision changes its provenance record: the change gets a receipt of its own. */
  receipts: ReceiptWriter;
}

/** A reviewer acting on tasks; `canAdminister` (scope ai.admin) sees every queue of the tenant. */
export interface Reviewer extends AdminCaller {
  canAdminister: boolean;
}

export interface DecisionResult {
  task: TaskRow;
  provenanceId: string;
  decision: ReviewDecision;
  releasedTextHash: string | null;
}
