/**
 * The response cache's first level: a least-recently-used map in this process, bounded in bytes,
 * with an index from tag to keys so an invalidation drops exactly the entries that depend on it,
 * and a bound per owner (tenant): an owner past its share loses its own oldest entries, so one
 * tenant's churn cannot push every other one out. Pure data structure: the caller passes the time.
 */

export interface MemoryEntry {
  body: string;
  tags: readonly string[];
  /** The Redis tag tokens the entry was stored under, when it was stored there too (L2). */
  tokens?: readonly string[];
  /** The tenant whose answer it is. */
  owner: string;
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
  /** Each owner's keys, oldest used first, and the bytes they hold. */
  private readonly byOwner = new Map<string, { keys: Set<string>; bytes: number }>();
  private used = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly ownerMaxBytes: number = maxBytes,
  ) {}

  /** Bytes `owner`'s entries hold. */
  ownerBytes(owner: string): number {
    return this.byOwner.get(owner)?.bytes ?? 0;
  }

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
    // Re-inserting moves it to the young end of the Map's (and its owner's Set's) order.
    this.entries.delete(key);
    this.entries.set(key, held);
    const owned = this.byOwner.get(held.owner)?.keys;
    owned?.delete(key);
    owned?.add(key);
    return held;
  }

  set(key: string, entry: MemoryEntry): void {
    this.drop(key);
    const bytes = OVERHEAD_BYTES + key.length + entry.body.length * 2 + entry.tags.reduce((n, t) => n + t.length * 2 + 16, 0);
    if (bytes > this.maxBytes || bytes > this.ownerMaxBytes) return;
    this.entries.set(key, { ...entry, bytes });
    this.used += bytes;
    for (const tag of entry.tags) {
      let keys = this.byTag.get(tag);
      if (!keys) this.byTag.set(tag, (keys = new Set()));
      keys.add(key);
    }
    let owned = this.byOwner.get(entry.owner);
    if (!owned) this.byOwner.set(entry.owner, (owned = { keys: new Set(), bytes: 0 }));
    owned.keys.add(key);
    owned.bytes += bytes;
    for (const oldest of owned.keys) {
      if (owned.bytes <= this.ownerMaxBytes) break;
      this.drop(oldest);
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
    this.byOwner.clear();
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
    const owned = this.byOwner.get(held.owner);
    if (owned) {
      owned.keys.delete(key);
      owned.bytes -= held.bytes;
      if (owned.keys.size === 0) this.byOwner.delete(held.owner);
    }
    for (const tag of held.tags) {
      const keys = this.byTag.get(tag);
      keys?.delete(key);
      if (keys?.size === 0) this.byTag.delete(tag);
    }
    return true;
  }
}
