/**
 * The stream sequences this process is applying now, and who waits for one of them to leave its
 * hands. The MAX_DELIVERIES safety net asks: a message whose last delivery ran out of ack wait
 * while it was still being handled here (its keep-alives lost with a NATS restart) gets the
 * verdict of the attempt under way, not a dead letter written beside it.
 *
 * A sequence may be taken twice at once (a redelivery reaching this process while the first
 * delivery is still in hand): it leaves when the last one is released.
 */
export class MessagesInHand {
  private readonly taken = new Map<number, number>();
  private readonly waiters = new Map<number, Array<() => void>>();

  /** `held`: whether a message waits here for an earlier one of its key (it is still in hand then). */
  constructor(private readonly held: (seq: number) => boolean) {}

  take(seq: number): void {
    this.taken.set(seq, (this.taken.get(seq) ?? 0) + 1);
  }

  /** One attempt at `seq` ends; the message stays in hand while it is held. */
  release(seq: number): void {
    const left = (this.taken.get(seq) ?? 1) - 1;
    if (left > 0) {
      this.taken.set(seq, left);
      return;
    }
    this.taken.delete(seq);
    if (!this.held(seq)) this.wake(seq);
  }

  has(seq: number): boolean {
    return this.taken.has(seq);
  }

  /** Resolves once `seq` is out of this process's hands (at once when it is not in them). */
  left(seq: number): Promise<void> {
    if (!this.taken.has(seq) && !this.held(seq)) return Promise.resolve();
    return new Promise<void>((resolve) => this.waiters.set(seq, [...(this.waiters.get(seq) ?? []), resolve]));
  }

  /** Stopping: nothing will be released any more, so nobody waits for it. */
  releaseAll(): void {
    this.taken.clear();
    for (const seq of [...this.waiters.keys()]) this.wake(seq);
  }

  private wake(seq: number): void {
    const waiting = this.waiters.get(seq);
    this.waiters.delete(seq);
    for (const resolve of waiting ?? []) resolve();
  }
}
