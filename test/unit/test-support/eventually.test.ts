import { describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';

describe('eventually', () => {
  it('returns the value of the first call that passes', async () => {
    let calls = 0;
    const value = await eventually(
      () => {
        calls += 1;
        if (calls < 3) throw new Error(`call ${calls} too early`);
        return 'ready';
      },
      'the third call',
      { intervalMs: 1 },
    );
    expect(value).toBe('ready');
    expect(calls).toBe(3);
  });

  it('treats an answer of false as not yet', async () => {
    let calls = 0;
    await eventually(() => ++calls >= 2, 'the second call', { intervalMs: 1 });
    expect(calls).toBe(2);
  });

  it('fails after the deadline with the last error of the probe', async () => {
    let calls = 0;
    await expect(
      eventually(
        () => {
          calls += 1;
          throw new Error(`still wrong after ${calls}`);
        },
        'something that never holds',
        { timeoutMs: 20, intervalMs: 1 },
      ),
    ).rejects.toThrow(new RegExp(`waiting for something that never holds: still wrong after \\d+$`));
    expect(calls).toBeGreaterThan(1);
  });

  it('gives up at once when waiting longer is pointless', async () => {
    let calls = 0;
    const exited = new Error('the process exited');
    await expect(
      eventually(() => ++calls > 100, 'a process that exited', { giveUpWhen: () => (calls >= 1 ? exited : undefined) }),
    ).rejects.toBe(exited);
    expect(calls).toBe(1);
  });
});
