import { nextBatch } from './group-commit.logic.js';

export interface GroupCommitOptions<T, R> {
  /** Writes the items of one batch in one statement (one commit); one result per item, in order. */
  write(batch: readonly T[]): Promise<readonly R[]>;
  /** Items with the same key never share a batch. */
  keyOf?(item: T): string | undefined;
  maxBatch: number;
  /** Batches committing at once; what arrives meanwhile waits and goes as the next batch. */
  maxInFlight: number;
}

interface Waiter<T, R> {
  item: T;
  resolve(result: R): void;
  reject(error: unknown): void;
}

/**
 * Group commit: concurrent writers' items go to the database together, one statement for all that
 * waited while the previous commit was in flight. No timer: a lone item is written at once, so the
 * batching costs it no latency; under load the batches grow by themselves. Each `submit` settles
 * only after the commit that holds its item, so a caller that answers after it answers only what is
 * written.
 *
 * A batch that fails is written again item by item, once: an item the database refuses (a value it
 * cannot store) then fails alone instead of failing every request it happened to be batched with;
 * when the database itself fails, every item fails. (A failed statement wrote nothing, so writing
 * its items again cannot write one twice.)
 */
export class GroupCommit<T, R> {
  private waiting: Array<Waiter<T, R>> = [];
  private inFlight = 0;

  constructor(private readonly options: GroupCommitOptions<T, R>) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.waiting.length > 0) {
      const { batch, rest } = nextBatch(this.waiting, this.options.maxBatch, (waiter) => this.options.keyOf?.(waiter.item));
      this.waiting = rest;
      this.inFlight += 1;
      void this.commit(batch).finally(() => {
        this.inFlight -= 1;
        this.pump();
      });
    }
  }

  private async commit(batch: ReadonlyArray<Waiter<T, R>>): Promise<void> {
    try {
      settle(batch, await this.writeAll(batch.map((waiter) => waiter.item)));
    } catch (error) {
      if (batch.length === 1) return batch[0]!.reject(error);
      await Promise.all(
        batch.map(async (waiter) => {
          try {
            settle([waiter], await this.writeAll([waiter.item]));
          } catch (alone) {
            waiter.reject(alone);
          }
        }),
      );
    }
  }

  private async writeAll(items: readonly T[]): Promise<readonly R[]> {
    const results = await this.options.write(items);
    if (results.length !== items.length) throw new Error(`group commit: ${results.length} results for ${items.length} items`);
    return results;
  }
}

function settle<T, R>(batch: ReadonlyArray<Waiter<T, R>>, results: readonly R[]): void {
  batch.forEach((waiter, index) => waiter.resolve(results[index]!));
}
