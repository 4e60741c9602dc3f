import type { EventBus } from '../../../events/bus/event-bus.js';
import {
  replaySelected,
  selectDeadLetters,
  type DeadLetter,
  type DeadLetterFilter,
  type DeadLetterLocation,
} from '../../../events/dead-letters.js';

function tenantOf(data: Uint8Array): string | undefined {
  try {
    const envelope = JSON.parse(Buffer.from(data).toString('utf8')) as { tenantId?: unknown };
    return typeof envelope.tenantId === 'string' ? envelope.tenantId : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The dead-letter stream is shared by every tenant, and the replay filter has no tenant member:
 * the caller's tenant's letters are the matching ones whose body names that tenant. Replay acts on
 * exactly those DLQ sequences and the answer lists only them; another tenant's letter is never
 * touched or shown, even when it carries the same eventId (producers choose event ids). A letter
 * whose body names no tenant (unparseable) is left to the platform operators.
 */
export async function replayTenantDeadLetters(
  bus: EventBus,
  deadLetterStream: DeadLetterLocation,
  tenantId: string,
  filter: DeadLetterFilter & { maxCount: number },
): Promise<{ matched: number; replayed: number; dryRun: boolean; letters: DeadLetter[] }> {
  const { maxCount, dryRun, ...selection } = filter;
  const own = (await selectDeadLetters(bus, deadLetterStream, selection))
    .filter(({ message, letter }) => letter.eventId && tenantOf(message.data) === tenantId)
    .slice(0, maxCount);
  const letters = own.map((selected) => selected.letter);
  if (dryRun || !own.length) return { matched: own.length, replayed: 0, dryRun: !!dryRun, letters };
  return { matched: own.length, replayed: await replaySelected(bus, deadLetterStream, own), dryRun: false, letters };
}
