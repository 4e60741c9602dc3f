import DataLoader from 'dataloader';
import type { AiContext } from '../context.js';
import { RELEASED_REVIEW_STATES } from '../review/review.logic.js';
import { findHeldTexts, type HeldText } from './provenance.repo.js';

/**
 * `AIProvenance.releasedText` of the records one request reads, kept beside the records rather
 * than on them: held text never travels with a provenance object that other fields or resolvers
 * could expose. A record the request read whole (`provenance`, its entity reference,
 * `Course.aiProvenance`: the row holds the text) is answered from that row, at once; any other
 * record's text is read for all of them in one statement (a DataLoader).
 *
 * Answering at once matters on a page of courses: an asynchronous field makes graphql-js complete
 * every record, and every list and course above it, through promises — on the wide page
 * (150 records) that was the AI subgraph's largest cost after its statements.
 */
interface ReleasedTexts {
  known: Map<string, string | null>;
  loader: DataLoader<string, string | null>;
}

const perRequest = new WeakMap<AiContext, ReleasedTexts>();

function releasedTexts(ctx: AiContext): ReleasedTexts {
  let texts = perRequest.get(ctx);
  if (!texts) {
    const loader = new DataLoader<string, string | null>(async (ids) => {
      const rows = new Map((await findHeldTexts(ctx.db, ctx.tenantId, ids)).map((row) => [row.id, row]));
      return ids.map((id) => releasedTextOf(rows.get(id)));
    });
    texts = { known: new Map(), loader };
    perRequest.set(ctx, texts);
  }
  return texts;
}

/** Rows this request read whole, with their held text and review state (already filtered by tenant). */
export function rememberReleasedTexts(ctx: AiContext, rows: readonly HeldText[]): void {
  const { known } = releasedTexts(ctx);
  for (const row of rows) known.set(row.id, releasedTextOf(row));
}

export function releasedText(ctx: AiContext, provenanceId: string): string | null | Promise<string | null> {
  const { known, loader } = releasedTexts(ctx);
  return known.has(provenanceId) ? known.get(provenanceId)! : loader.load(provenanceId);
}

/** The held text once a reviewer released it (as generated or edited); null before, after a rejection, or for no such record. */
function releasedTextOf(row: HeldText | undefined): string | null {
  return row && row.reviewState !== null && RELEASED_REVIEW_STATES.has(row.reviewState) ? row.heldText : null;
}
