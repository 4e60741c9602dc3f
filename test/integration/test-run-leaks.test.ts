import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { alive } from '../support/proc.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

/**
 * The check at the end of `npm test` (test/support/test-run.ts) on a run whose one test leaks a
 * process and a temporary folder on purpose: the run must fail, name both, and clean them up.
 */
describe('the end-of-run leak check', () => {
  it('fails a run that leaves a process or a temporary folder behind, and names both', async () => {
    const result = await run(
      process.execPath,
      ['--import', 'tsx', 'test/support/test-run.ts', '--config', 'test/fixtures/leaks/vitest.config.ts'],
      { cwd: ROOT, env: process.env },
    ).then(
      () => ({ code: 0, output: '' }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr }),
    );
    expect(result.code, result.output).toBe(1);
    const leaked = /LEAKED pid=(\d+) dir=(\S+)/.exec(result.output);
    expect(leaked, result.output).not.toBeNull();
    const [, pid, dir] = leaked!;
    expect(result.output).toMatch(new RegExp(`still running[\\s\\S]*pid ${pid}:`));
    expect(result.output).toMatch(new RegExp(`were left in [\\s\\S]*${dir}`));
    expect(alive(Number(pid))).toBe(false);
  });
});
