/**
 * Which tags this process invalidated since a given moment (its invalidation count), so an answer
 * fetched while something else changed can still be stored: it is refused only when one of its own
 * tags was invalidated after its read began, the rule L1 applies to entries already stored and the
 * cache Redis applies with its tag tokens. Bounded: the oldest tags are forgotten, and a moment
 * before the newest forgotten one counts as "everything changed since", which refuses more, never
 * less. Pure data structure.
 */
export class InvalidationLog {
  /** Tag → the invalidation count when it was last invalidated, oldest first. */
  private readonly lastSeq = new Map<string, number>();
  /** Everything counts as invalidated up to this count (forgotten tags, a clear). */
  private floor = 0;

  constructor(private readonly maxTags: number) {}

  record(tags: readonly string[], seq: number): void {
    for (const tag of tags) {
      this.lastSeq.delete(tag);
      this.lastSeq.set(tag, seq);
    }
    for (const [tag, tagSeq] of this.lastSeq) {
      if (this.lastSeq.size <= this.maxTags) break;
      this.floor = Math.max(this.floor, tagSeq);
      this.lastSeq.delete(tag);
    }
  }

  /** Everything invalidated at `seq` (e.g. L1 cleared). */
  clear(seq: number): void {
    this.floor = seq;
    this.lastSeq.clear();
  }

  /** Whether one of `tags` was invalidated after the count was `seq`. */
  changedSince(tags: readonly string[], seq: number): boolean {
    if (this.floor > seq) return true;
    return tags.some((tag) => (this.lastSeq.get(tag) ?? 0) > seq);
  }
}
