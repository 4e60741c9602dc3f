// The outbox relay's decisions that need no I/O (outbox-relay.ts applies them).

/** What one relay round came to: another round at once, the poll interval, or a backoff. */
export type RelayTick = 'more' | 'idle' | 'failed';

export interface RelayFailure<Row> {
  row: Row;
  error: string;
}

/** The rows of each partition, in their order; partitions in the order they first appear. */
export function inPartitions<Row extends { partitionKey: string }>(rows: readonly Row[]): Row[][] {
  const partitions = new Map<string, Row[]>();
  for (const row of rows) {
    const partition = partitions.get(row.partitionKey);
    if (partition) partition.push(row);
    else partitions.set(row.partitionKey, [row]);
  }
  return [...partitions.values()];
}

/** Of a round's failed rows, the one reported and counted: the lowest-numbered. */
export function reportedFailure<Row extends { id: bigint }>(
  failures: readonly RelayFailure<Row>[],
): RelayFailure<Row> | undefined {
  let lowest: RelayFailure<Row> | undefined;
  for (const failure of failures) if (!lowest || failure.row.id < lowest.row.id) lowest = failure;
  return lowest;
}

/** After a round without failure: a full batch means more rows may be waiting. */
export function afterRelayRun(run: { locked: boolean; published: number }, batchSize: number): RelayTick {
  return run.locked && run.published === batchSize ? 'more' : 'idle';
}

/**
 * How much longer a woken relay waits before its next round: until `gapMs` after the previous round
 * ended. Every commit of outbox rows wakes the leader (LISTEN/NOTIFY), so under a steady stream of
 * commits it would run one round per row, each a transaction of its own; with the gap a round
 * takes what accumulated meanwhile, at most 1000 / gapMs rounds a second, at the cost of at most
 * `gapMs` of publish delay. A round after an idle poll interval longer than the gap never waits.
 */
export function restOfRoundGapMs(previousRoundEndedMs: number, nowMs: number, gapMs: number): number {
  return Math.max(0, previousRoundEndedMs + gapMs - nowMs);
}
