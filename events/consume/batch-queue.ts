/**
 * Gathers items into batches of up to `size` and runs at most `parallel` batches at once, in the
 * order the items arrived. A batch starts on the next turn of the event loop after its first item,
 * so the messages a pull brought in together are handled together; `add` resolves when the batch
 * holding the item has run.
 */
export class BatchQueue<T> {
  private readonly waiting: Array<{ item: T; done: () => void }> = [];
  private running = 0;
  private scheduled = false;

  constructor(
    private readonly size: number,
    private readonly parallel: number,
    private readonly run: (batch: T[]) => Promise<void>,
  ) {}

  /** Items worth having in hand: the running batches and the next ones gathering. */
  get capacity(): number {
    return this.size * (this.parallel + 1);
  }

  add(item: T): Promise<void> {
    return new Promise((done) => {
      this.waiting.push({ item, done });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.start();
    });
  }

  private start(): void {
    while (this.waiting.length && this.running < this.parallel) {
      const taken = this.waiting.splice(0, this.size);
      this.running += 1;
      void this.run(taken.map((w) => w.item)).finally(() => {
        this.running -= 1;
        for (const w of taken) w.done();
        if (this.waiting.length) this.schedule();
      });
    }
  }
}
