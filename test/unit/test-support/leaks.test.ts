import { describe, expect, it } from 'vitest';
import { leakReport, leftoverEntries, processesOfRun, type ProcessFacts } from '../../support/leaks.logic.js';

const run = { runId: 'abc-1', tmpDir: '/tmp/test-run-abc-1' };
const proc = (pid: number, environ: string[], command: string): ProcessFacts => ({ pid, environ: environ.join('\0'), command });

describe('leak check', () => {
  it('finds the processes that carry the run id or keep data in the run folder, and no other', () => {
    const processes = [
      proc(1, ['PATH=/bin', 'TEST_RUN_ID=abc-1'], 'node main.ts'),
      proc(2, ['TEST_RUN_ID=abc-10'], 'node main.ts'),
      proc(3, ['PATH=/bin'], '/usr/lib/postgresql/17/bin/postgres -D /tmp/test-run-abc-1/reliability-pg-x/data'),
      proc(4, ['PATH=/bin'], 'nats-server -sd /tmp/test-run-abc-10/x'),
      proc(5, ['PATH=/bin'], 'redis-server --port 6379'),
    ];
    expect(processesOfRun(processes, run).map((p) => p.pid)).toEqual([1, 3]);
  });

  it("counts every leftover entry of the run's TMPDIR except tsx's and Node's compile caches", () => {
    expect(leftoverEntries(['tsx-0', 'system-e2e-x1', 'node-compile-cache', 'port-reservations', 'jwks-y', 'tsx-1000'])).toEqual([
      'jwks-y',
      'system-e2e-x1',
    ]);
    expect(leftoverEntries(['tsx-cache-copy'])).toEqual(['tsx-cache-copy']);
  });

  it('reports nothing when nothing is left, and names each leak otherwise', () => {
    expect(leakReport([], [], run.tmpDir)).toBe('');
    const report = leakReport([proc(7, [], 'node main.ts')], ['system-e2e-x1'], run.tmpDir);
    expect(report).toContain('pid 7: node main.ts');
    expect(report).toContain(`left in ${run.tmpDir}`);
    expect(report).toContain('system-e2e-x1');
  });
});
