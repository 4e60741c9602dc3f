/**
 * The response cache's first level: a least-recently-used map in this process, bounded in bytes,
 * with an index from tag to keys so an invalidation drops exactly the entries that depend on it.
 * Pure data structure: the caller passes the time.
 */

export interface MemoryEntry {
  body: string;
  tags: readonly string[];
  /** The Redis tag tokens the entry was stored under, when it was stored there too (L2). */
  tokens?: readonly string[];
  expiresAt: number;
}

interface Held extends MemoryEntry {
  bytes: number;
}

/** Per-entry bookkeeping counted on top of the key and body (Map slots, tag index). */
const OVERHEAD_BYTES = 200;

export class MemoryStore {
  private readonly entries = new Map<string, Held>();
  private readonly byTag = new Map<string, Set<string>>();
  private used = 0;

  constructor(private readonly maxBytes: number) {}

  bytes(): number {
    return this.used;
  }

  size(): number {
    return this.entries.size;
  }

  get(key: string, now: number): MemoryEntry | undefined {
    const held = this.entries.get(key);
    if (!held) return undefined;
    if (held.expiresAt <= now) {
      this.drop(key);
      return undefined;
    }
    // Re-inserting moves it to the young end of the Map's order.
    this.entries.delete(key);
    this.entries.set(key, held);
    return held;
  }

  set(key: string, entry: MemoryEntry): void {
    this.drop(key);
    const bytes = OVERHEAD_BYTES + key.length + entry.body.length * 2 + entry.tags.reduce((n, t) => n + t.length * 2 + 16, 0);
    if (bytes > this.maxBytes) return;
    this.entries.set(key, { ...entry, bytes });
    this.used += bytes;
    for (const tag of entry.tags) {
      let keys = this.byTag.get(tag);
      if (!keys) this.byTag.set(tag, (keys = new Set()));
      keys.add(key);
    }
    for (const oldest of this.entries.keys()) {
      if (this.used <= this.maxBytes) break;
      this.drop(oldest);
    }
  }

  /** Drops every entry that depends on one of `tags`; returns how many. */
  invalidate(tags: readonly string[]): number {
    let dropped = 0;
    for (const tag of tags) {
      for (const key of [...(this.byTag.get(tag) ?? [])]) if (this.drop(key)) dropped++;
    }
    return dropped;
  }

  clear(): void {
    this.entries.clear();
    this.byTag.clear();
    this.used = 0;
  }

  delete(key: string): boolean {
    return this.drop(key);
  }

  private drop(key: string): boolean {
    const held = this.entries.get(key);
    if (!held) return false;
    this.entries.delete(key);
    this.used -= held.bytes;
    for (const tag of held.tags) {
      const keys = this.byTag.get(tag);
      keys?.delete(key);
      if (keys?.size === 0) this.byTag.delete(tag);
    }
    return true;
  }
}
