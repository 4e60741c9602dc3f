import { describe, expect, it } from 'vitest';
import { MessagesInHand } from '../../../events/consume/messages-in-hand.js';

/** Settles `promise` within this turn of the event loop or reports it as still pending. */
async function state(promise: Promise<void>): Promise<'left' | 'pending'> {
  return Promise.race([
    promise.then(() => 'left' as const),
    new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending'))),
  ]);
}

const notHeld = () => false;

describe('MessagesInHand', () => {
  it('answers at once for a sequence it does not hold', async () => {
    expect(await state(new MessagesInHand(notHeld).left(7))).toBe('left');
  });

  it('waits until the last of two deliveries of one sequence is released', async () => {
    const inHand = new MessagesInHand(notHeld);
    inHand.take(7);
    inHand.take(7);
    const left = inHand.left(7);
    inHand.release(7);
    expect(await state(left)).toBe('pending');
    inHand.release(7);
    expect(await state(left)).toBe('left');
    expect(inHand.has(7)).toBe(false);
  });

  it('keeps waiting while the message is held for an earlier one of its key, until its next attempt ends', async () => {
    const held = new Set([7]);
    const inHand = new MessagesInHand((seq) => held.has(seq));
    inHand.take(7);
    const left = inHand.left(7);
    inHand.release(7);
    expect(await state(left)).toBe('pending');
    held.delete(7);
    inHand.take(7);
    inHand.release(7);
    expect(await state(left)).toBe('left');
  });

  it('waits for a held message that is not being applied right now', async () => {
    const left = new MessagesInHand((seq) => seq === 9).left(9);
    expect(await state(left)).toBe('pending');
  });

  it('lets every waiter go when the consumer stops', async () => {
    const inHand = new MessagesInHand(notHeld);
    inHand.take(3);
    const left = inHand.left(3);
    inHand.releaseAll();
    expect(await state(left)).toBe('left');
  });

  it('does not wake a waiter of another sequence', async () => {
    const inHand = new MessagesInHand(notHeld);
    inHand.take(1);
    inHand.take(2);
    const left = inHand.left(2);
    inHand.release(1);
    expect(await state(left)).toBe('pending');
  });
});
