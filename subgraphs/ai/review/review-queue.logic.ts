import { badInput } from '../../../platform/errors/errors.js';

/**
 * Review queues as plain data: which queue a held output (or an open task) goes to, and the
 * queue fields an admin may write.
 */

export interface QueueRouting {
  id: string;
  facilityId: string | null;
  specialty: string | null;
}

/** facility + specialty > facility > specialty > the tenant's catch-all queue (neither set). */
export function queueSpecificity(queue: Pick<QueueRouting, 'facilityId' | 'specialty'>): number {
  return (queue.facilityId !== null ? 2 : 0) + (queue.specialty !== null ? 1 : 0);
}

export function queueMatches(queue: QueueRouting, context: { facilityId: string | null; specialty: string | null }): boolean {
  return (
    (queue.facilityId === null || queue.facilityId === context.facilityId) &&
    (queue.specialty === null || queue.specialty === context.specialty)
  );
}

/** The most specific matching queue; none when the tenant has no queue for the context. */
export function selectQueue<Q extends QueueRouting>(
  queues: readonly Q[],
  context: { facilityId: string | null; specialty: string | null },
): Q | undefined {
  let best: Q | undefined;
  for (const queue of queues) {
    if (!queueMatches(queue, context)) continue;
    // Equal routing is refused when queues are written, so ties only break on id to stay deterministic.
    if (
      !best ||
      queueSpecificity(queue) > queueSpecificity(best) ||
      (queueSpecificity(queue) === queueSpecificity(best) && queue.id < best.id)
    ) {
      best = queue;
    }
  }
  return best;
}

/**
 * Open (unclaimed) tasks follow the queue routing as it is now: each goes to its most specific
 * queue. Returns the moves, task ids by target queue; a task no queue matches stays where it is.
 */
export function reroutePlan(
  queues: readonly QueueRouting[],
  openTasks: ReadonlyArray<{ id: string; queueId: string | null; facilityId: string | null; specialty: string | null }>,
): Map<string, string[]> {
  const moves = new Map<string, string[]>();
  for (const task of openTasks) {
    const target = selectQueue(queues, task)?.id ?? null;
    if (target === task.queueId || target === null) continue;
    moves.set(target, [...(moves.get(target) ?? []), task.id]);
  }
  return moves;
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$/;
const MAX_MEMBERS = 500;

export interface QueueInput {
  name?: string;
  facilityId?: string | null;
  specialty?: string | null;
  members?: string[];
}

function optionalKey(value: string | null | undefined, argument: string): string | null {
  if (value == null) return null;
  if (value.trim() === '' || value.length > 128) throw badInput(`${argument} is 1-128 characters, or null for any`, { argument });
  return value;
}

/** Queue fields from an admin: a readable name, routing keys, reviewers by token subject, no repeats. */
export function validateQueueInput(input: QueueInput): QueueInput {
  const out: QueueInput = {};
  if (input.name !== undefined) {
    if (!NAME_RE.test(input.name)) throw badInput('A queue name is 1-80 letters, digits, spaces or ._-', { argument: 'name' });
    out.name = input.name;
  }
  if (input.facilityId !== undefined) out.facilityId = optionalKey(input.facilityId, 'facilityId');
  if (input.specialty !== undefined) out.specialty = optionalKey(input.specialty, 'specialty');
  if (input.members !== undefined) {
    if (input.members.length > MAX_MEMBERS) throw badInput(`At most ${MAX_MEMBERS} members`, { argument: 'members' });
    for (const member of input.members) {
      if (member.trim() === '' || member.length > 200)
        throw badInput('A member is a token subject of 1-200 characters', { argument: 'members' });
    }
    out.members = [...new Set(input.members)];
  }
  return out;
}

/** The routing of a queue after an update: fields given change (null widens to any), others stay. */
export function routingAfterUpdate(
  update: Pick<QueueInput, 'facilityId' | 'specialty'>,
  current: { facilityId: string | null; specialty: string | null },
): { facilityId: string | null; specialty: string | null } {
  return {
    facilityId: update.facilityId !== undefined ? update.facilityId : current.facilityId,
    specialty: update.specialty !== undefined ? update.specialty : current.specialty,
  };
}
