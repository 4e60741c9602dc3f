import { describe, expect, it } from 'vitest';
import { BatchQueue } from '../../../events/consume/batch-queue.js';

/** A run function whose batches finish only when the test says so. */
function controlledRuns() {
  const batches: number[][] = [];
  const finishers: Array<() => void> = [];
  let running = 0;
  let maxRunning = 0;
  const run = (batch: number[]) => {
    batches.push(batch);
    running += 1;
    maxRunning = Math.max(maxRunning, running);
    return new Promise<void>((resolve) =>
      finishers.push(() => {
        running -= 1;
        resolve();
      }),
    );
  };
  // Two turns: a finished batch schedules the next one from a microtask, after this turn's callback.
  const turn = async () => {
    for (let i = 0; i < 2; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  };
  return { batches, finishers, run, turn, maxRunning: () => maxRunning };
}

describe('BatchQueue', () => {
  it('handles what arrives in one turn of the event loop as one batch, in arrival order, up to its size', async () => {
    const c = controlledRuns();
    const queue = new BatchQueue<number>(4, 1, c.run);
    const added = [1, 2, 3, 4, 5, 6].map((n) => queue.add(n));
    await c.turn();
    expect(c.batches).toEqual([[1, 2, 3, 4]]);
    c.finishers[0]();
    await Promise.all(added.slice(0, 4));
    await c.turn();
    expect(c.batches).toEqual([
      [1, 2, 3, 4],
      [5, 6],
    ]);
    c.finishers[1]();
    await Promise.all(added);
  });

  it('runs at most `parallel` batches at once, and gathers the next one meanwhile', async () => {
    const c = controlledRuns();
    const queue = new BatchQueue<number>(2, 2, c.run);
    expect(queue.capacity).toBe(6);
    const added = [1, 2, 3, 4, 5].map((n) => queue.add(n));
    await c.turn();
    expect(c.batches).toEqual([
      [1, 2],
      [3, 4],
    ]);
    const later = queue.add(6);
    await c.turn();
    expect(c.batches).toHaveLength(2);
    c.finishers[1]();
    await c.turn();
    expect(c.batches[2]).toEqual([5, 6]);
    c.finishers[0]();
    c.finishers[2]();
    await Promise.all([...added, later]);
    expect(c.maxRunning()).toBe(2);
  });

  it('resolves an item only once the batch holding it has run', async () => {
    const c = controlledRuns();
    const queue = new BatchQueue<string>(10, 1, c.run as unknown as (batch: string[]) => Promise<void>);
    let resolved = false;
    const added = queue.add('a').then(() => {
      resolved = true;
    });
    await c.turn();
    expect(resolved).toBe(false);
    c.finishers[0]();
    await added;
    expect(resolved).toBe(true);
  });
});
