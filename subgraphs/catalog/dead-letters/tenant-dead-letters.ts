import type { EventBus } from '../../../events/bus/event-bus.js';
import {
  listDeadLetters,
  replayDeadLetters,
  type DeadLetter,
  type DeadLetterFilter,
  type DlqLocation,
} from '../../../events/dlq.js';

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
 * the letters of the caller's tenant are found by reading each matching letter's envelope, and
 * only their event ids are handed to the replay. A letter whose body names no tenant (unparseable)
 * is left to the platform operators.
 */
export async function replayTenantDeadLetters(
  bus: EventBus,
  dlq: DlqLocation,
  tenantId: string,
  filter: DeadLetterFilter & { maxCount: number },
): Promise<{ matched: number; replayed: number; dryRun: boolean; letters: DeadLetter[] }> {
  const { maxCount, dryRun, ...selection } = filter;
  const candidates = await listDeadLetters(bus, dlq, selection);
  const own: DeadLetter[] = [];
  for (const letter of candidates) {
    if (own.length >= maxCount) break;
    if (!letter.eventId) continue;
    const stored = await bus.getMessage(dlq.stream, letter.seq);
    if (stored && tenantOf(stored.data) === tenantId) own.push(letter);
  }
  if (dryRun || !own.length) return { matched: own.length, replayed: 0, dryRun: !!dryRun, letters: own };
  const result = await replayDeadLetters(bus, dlq, { ...selection, eventIds: own.map((letter) => letter.eventId!) });
  return { matched: own.length, replayed: result.replayed, dryRun: false, letters: result.letters };
}
