/**
 * Runs a bounded DELETE (one returning how many rows it removed, at most `batchSize`) until a
 * batch comes back short: retention purges never hold their locks or bloat WAL for long.
 */
export async function deleteInBatches(batchSize: number, deleteBatch: (limit: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await deleteBatch(batchSize);
    total += deleted;
    if (deleted < batchSize) return total;
  }
}
