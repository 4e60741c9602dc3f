/** One L1 entry waiting to be confirmed. */
interface Waiting {
  tags: readonly string[];
  tokens: readonly string[];
  resolve(current: boolean): void;
  reject(error: unknown): void;
}

/** Reads the token each tag holds now (undefined when its key is gone), in one round trip. */
export type ReadTokens = (tags: readonly string[]) => Promise<Array<string | undefined>>;

/**
 * Confirms L1 entries against the tag tokens in Redis (redis-store.ts), many in one round trip.
 * A check asked for while a read is in flight waits for the next read, which is sent once that
 * one is back: so every entry is confirmed by a read that began after its request arrived, and a
 * write another replica finished before that is seen, exactly as with one round trip per hit. Under
 * load that is one round trip per Redis round-trip time instead of one per hit (a warm page spent
 * 8 % of the gateway's CPU on these checks, bench/results/2026-11-26T0740-gateway-cache-profile.md).
 */
export class TokenCheck {
  private waiting: Waiting[] = [];
  private reading = false;

  constructor(private readonly readTokens: ReadTokens) {}

  /** True while every tag still holds the token recorded with the entry. */
  check(tags: readonly string[], tokens: readonly string[]): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ tags, tokens, resolve, reject });
      if (!this.reading) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.reading = true;
    while (this.waiting.length > 0) {
      const batch = this.waiting;
      this.waiting = [];
      const tags = [...new Set(batch.flatMap((entry) => entry.tags))];
      try {
        const current = await this.readTokens(tags);
        const now = new Map(tags.map((tag, i) => [tag, current[i]]));
        for (const entry of batch) entry.resolve(entry.tags.every((tag, i) => now.get(tag) === entry.tokens[i]));
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    this.reading = false;
  }
}
