// `npm test` (and `npm run test:*`): runs vitest with the given arguments, then fails the run when
// the tests left a process running or a temporary folder behind.
//
// The run gets an id (TEST_RUN_ID) and a TMPDIR of its own. Children inherit both, so a leak is
// anything still carrying the id, or a server whose data folder is in the run's TMPDIR, once vitest
// has exited (its own workers are gone by then), and anything still in that TMPDIR.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { alive } from './proc.js';
import {
  leakReport,
  leftoverEntries,
  processesOfRun,
  RUN_ID_VARIABLE,
  type ProcessFacts,
  type RunIdentity,
} from './leaks.logic.js';

/** How long processes may take to finish exiting after vitest has (a SIGTERM'd server flushing). */
const EXIT_GRACE_MS = 5_000;

function startRun(): RunIdentity {
  const runId = `${Date.now().toString(36)}-${process.pid}`;
  const tmpDir = path.join(os.tmpdir(), `test-run-${runId}`);
  fs.mkdirSync(tmpDir);
  // Like /tmp: the private Postgres runs as the postgres user and keeps its folder in here.
  fs.chmodSync(tmpDir, 0o1777);
  return { runId, tmpDir };
}

function runVitest(args: string[], run: RunIdentity): Promise<number> {
  const require = createRequire(import.meta.url);
  const vitest = path.join(path.dirname(require.resolve('vitest/package.json')), 'vitest.mjs');
  const child = spawn(process.execPath, [vitest, 'run', ...args], {
    stdio: 'inherit',
    // As `npm start` and the image do: no test process reports usage to Apollo.
    env: { APOLLO_TELEMETRY_DISABLED: 'true', ...process.env, [RUN_ID_VARIABLE]: run.runId, TMPDIR: run.tmpDir },
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

function readProcesses(): ProcessFacts[] {
  const facts: ProcessFacts[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
      const command = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
      facts.push({ pid, environ, command });
    } catch {
      // Gone meanwhile, or another user's process: not one of ours.
    }
  }
  return facts;
}

async function lingeringProcesses(run: RunIdentity): Promise<ProcessFacts[]> {
  const deadline = Date.now() + EXIT_GRACE_MS;
  for (;;) {
    const left = processesOfRun(readProcesses(), run);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * SIGKILLs every lingering process and waits (bounded) until each is gone: a SIGKILL is delivered
 * asynchronously, and on a loaded machine a killed process can still run for a moment after
 * kill() returns; whoever reads the report must find it dead.
 */
async function killAll(processes: ProcessFacts[]): Promise<void> {
  for (const { pid } of processes) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Exited on its own in the meantime.
    }
  }
  const deadline = Date.now() + EXIT_GRACE_MS;
  while (processes.some(({ pid }) => alive(pid)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const run = startRun();
const code = await runVitest(process.argv.slice(2), run);
const processes = await lingeringProcesses(run);
await killAll(processes);
const entries = leftoverEntries(fs.readdirSync(run.tmpDir));
const report = leakReport(processes, entries, run.tmpDir);
fs.rmSync(run.tmpDir, { recursive: true, force: true });
if (report) {
  console.error(`\n[leaks] The tests left things behind:\n${report}\n`);
  process.exit(code || 1);
}
console.log(`[leaks] no process or temporary folder left behind (run ${run.runId})`);
process.exit(code);
