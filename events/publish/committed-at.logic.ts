// The commit time the relay stamps on what it publishes, when the database tracks commit times.

/**
 * A header the relay adds to each event it publishes from the outbox: the epoch milliseconds at
 * which the transaction that wrote the row committed. Only when the database tracks commit times
 * (`track_commit_timestamp = on`; the embedded database does): the envelope's `occurredAt` is set
 * inside the transaction, before the commit, so lags measured from it include the rest of the
 * transaction. A follower measuring "commit → done" reads this header; without it, it has only
 * `occurredAt`, an upper bound.
 */
export const COMMITTED_AT_HEADER = 'Outbox-Committed-At';

/** The header for a row's commit time; none when the database did not know it. */
export function committedAtHeader(committedAtMs: number | null | undefined): Record<string, string> {
  return typeof committedAtMs === 'number' && Number.isFinite(committedAtMs)
    ? { [COMMITTED_AT_HEADER]: String(Math.round(committedAtMs)) }
    : {};
}

/** The commit time a message carries (epoch ms), or undefined when absent or unreadable. */
export function committedAtOf(headers: Readonly<Record<string, string>>): number | undefined {
  const text = headers[COMMITTED_AT_HEADER];
  if (text === undefined || !/^\d{1,15}$/.test(text)) return undefined;
  return Number(text);
}
