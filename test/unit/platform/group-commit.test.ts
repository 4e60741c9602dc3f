import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../../platform/db/group-commit.js';
import { nextBatch } from '../../../platform/db/group-commit.logic.js';

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject };
}

/** A store whose every write waits until the test answers it, so the batches are decided by the test alone. */
function scriptedStore() {
  const writes: Array<{ items: string[]; done: ReturnType<typeof deferred<readonly string[]>> }> = [];
  return {
    writes,
    write: (items: readonly string[]) => {
      const done = deferred<readonly string[]>();
      writes.push({ items: [...items], done });
      return done.promise;
    },
    /** Commits write `index`: each item's result is its own name, written. */
    commit: (index: number) => writes[index]!.done.resolve(writes[index]!.items.map((item) => `${item} written`)),
    fail: (index: number, error = new Error('connection terminated')) => writes[index]!.done.reject(error),
  };
}

const settled = <T>(promise: Promise<T>) => {
  const state: { value?: T; error?: unknown; done: boolean } = { done: false };
  promise.then(
    (value) => Object.assign(state, { value, done: true }),
    (error: unknown) => Object.assign(state, { error, done: true }),
  );
  return state;
};

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('nextBatch', () => {
  it('takes the waiting items in order up to the maximum; an item whose key is already in the batch keeps its place for the next', () => {
    const items = ['a:1', 'b:2', 'c:1', 'd', 'e:3', 'f:4'];
    const key = (item: string) => item.split(':')[1];
    expect(nextBatch(items, 4, key)).toEqual({ batch: ['a:1', 'b:2', 'd', 'e:3'], rest: ['c:1', 'f:4'] });
    expect(nextBatch(['c:1', 'f:4'], 4, key)).toEqual({ batch: ['c:1', 'f:4'], rest: [] });
  });
});

describe('GroupCommit', () => {
  it('writes a lone item at once, with no timer in front of it', () => {
    const store = scriptedStore();
    const commits = new GroupCommit({ write: store.write, maxBatch: 64, maxInFlight: 1 });
    void commits.submit('a');
    // Synchronously: nothing waits for a window to fill.
    expect(store.writes.map((w) => w.items)).toEqual([['a']]);
  });

  it('writes everything that arrived while a commit was in flight as the next batch, and answers each only after its own commit', async () => {
    const store = scriptedStore();
    const commits = new GroupCommit({ write: store.write, maxBatch: 64, maxInFlight: 1 });
    const a = settled(commits.submit('a'));
    const later = ['b', 'c', 'd'].map((item) => settled(commits.submit(item)));
    expect(store.writes.map((w) => w.items)).toEqual([['a']]);

    store.commit(0);
    await flush();
    expect(a).toMatchObject({ done: true, value: 'a written' });
    expect(store.writes.map((w) => w.items)).toEqual([['a'], ['b', 'c', 'd']]);
    // Their commit has not happened yet: none of them is answered.
    expect(later.map((state) => state.done)).toEqual([false, false, false]);

    store.commit(1);
    await flush();
    expect(later.map((state) => state.value)).toEqual(['b written', 'c written', 'd written']);
  });

  it('keeps two items with one key out of one statement', async () => {
    const store = scriptedStore();
    const commits = new GroupCommit({ write: store.write, keyOf: (item) => item[0], maxBatch: 64, maxInFlight: 1 });
    void commits.submit('x0');
    for (const item of ['k1', 'm1', 'k2']) void commits.submit(item);
    store.commit(0);
    await flush();
    expect(store.writes[1]!.items).toEqual(['k1', 'm1']);
    store.commit(1);
    await flush();
    expect(store.writes[2]!.items).toEqual(['k2']);
  });

  it('fails every item of a failed group commit when the database fails them alone too', async () => {
    const store = scriptedStore();
    const commits = new GroupCommit({ write: store.write, maxBatch: 64, maxInFlight: 1 });
    void commits.submit('a').catch(() => undefined);
    const batch = ['b', 'c', 'd'].map((item) => settled(commits.submit(item)));
    store.commit(0);
    await flush();
    store.fail(1);
    await flush();
    // Each item is tried alone once, and the database refuses each again.
    expect(store.writes.slice(2).map((w) => w.items)).toEqual([['b'], ['c'], ['d']]);
    for (const index of [2, 3, 4]) store.fail(index);
    await flush();
    expect(batch.map((state) => state.done && state.value === undefined && (state.error as Error).message)).toEqual([
      'connection terminated',
      'connection terminated',
      'connection terminated',
    ]);
  });

  it('fails only the item the database refuses: its batch-mates are written alone and answered', async () => {
    const store = scriptedStore();
    const commits = new GroupCommit({ write: store.write, maxBatch: 64, maxInFlight: 1 });
    void commits.submit('a');
    const batch = ['b', 'poison', 'd'].map((item) => settled(commits.submit(item)));
    store.commit(0);
    await flush();
    store.fail(1, new Error('unsupported Unicode escape sequence'));
    await flush();
    store.commit(2);
    store.fail(3, new Error('unsupported Unicode escape sequence'));
    store.commit(4);
    await flush();
    expect(batch.map((state) => state.value ?? (state.error as Error).message)).toEqual([
      'b written',
      'unsupported Unicode escape sequence',
      'd written',
    ]);
  });

  it('runs at most maxInFlight commits at once', async () => {
    const store = scriptedStore();
    const commits = new GroupCommit({ write: store.write, maxBatch: 2, maxInFlight: 2 });
    for (const item of ['a', 'b', 'c', 'd', 'e']) void commits.submit(item);
    expect(store.writes.map((w) => w.items)).toEqual([['a'], ['b']]);
    store.commit(1);
    await flush();
    expect(store.writes.map((w) => w.items)).toEqual([['a'], ['b'], ['c', 'd']]);
  });
});
