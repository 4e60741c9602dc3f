/**
 * The next batch of a group commit: the waiting items in arrival order, at most `max` of them. An
 * item whose key an earlier item of the batch already holds waits for a later batch (one statement
 * cannot write a key twice: Postgres refuses an upsert that touches a row twice), keeping its place.
 */
export function nextBatch<T>(
  waiting: readonly T[],
  max: number,
  keyOf: (item: T) => string | undefined,
): { batch: T[]; rest: T[] } {
  const batch: T[] = [];
  const rest: T[] = [];
  const keys = new Set<string>();
  for (const item of waiting) {
    const key = keyOf(item);
    if (batch.length >= max || (key !== undefined && keys.has(key))) {
      rest.push(item);
      continue;
    }
    if (key !== undefined) keys.add(key);
    batch.push(item);
  }
  return { batch, rest };
}
