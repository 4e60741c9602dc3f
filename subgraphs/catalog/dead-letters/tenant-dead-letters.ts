import type { DeadLetterReplayBus } from '../../../events/dead-letters/dead-letters.js';
import {
  replayDeadLetters,
  type DeadLetter,
  type DeadLetterFilter,
  type DeadLetterLocation,
} from '../../../events/dead-letters/dead-letters.js';

/**
 * The dead-letter stream is shared by every tenant, and the replay filter has no tenant member:
 * the caller's tenant's letters are the matching ones whose event names that tenant (the letter's
 * x-tenant-id header). Replay acts on exactly those DLQ sequences and the answer lists only them;
 * another tenant's letter is never touched or shown, even when it carries the same eventId
 * (producers choose event ids). A letter whose event names no tenant (unparseable) is left to the
 * platform operators.
 */
export async function replayTenantDeadLetters(
  bus: DeadLetterReplayBus,
  deadLetterStream: DeadLetterLocation,
  tenantId: string,
  filter: DeadLetterFilter & { maxCount: number },
): Promise<{ matched: number; replayed: number; dryRun: boolean; letters: DeadLetter[] }> {
  const result = await replayDeadLetters(bus, deadLetterStream, { ...filter, tenantId });
  return { ...result, dryRun: !!filter.dryRun };
}
