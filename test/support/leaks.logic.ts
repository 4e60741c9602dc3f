/**
 * What a test run left behind. Every process a test starts inherits `TEST_RUN_ID` (tests pass
 * their environment on to what they spawn), and every temporary folder lands in the run's own
 * TMPDIR; after vitest has exited, anything still carrying either is a leak.
 */

/** The environment variable naming the run, inherited by everything the tests start. */
export const RUN_ID_VARIABLE = 'TEST_RUN_ID';

export interface ProcessFacts {
  pid: number;
  /** NUL-separated `KEY=value` entries as /proc/<pid>/environ holds them (the environment at exec). */
  environ: string;
  /** The command line, arguments joined by spaces. */
  command: string;
}

export interface RunIdentity {
  runId: string;
  /** The run's TMPDIR: servers started with a data folder inside it (pg_ctl's postmaster detaches). */
  tmpDir: string;
}

/** Processes started by the run: they carry its id, or name a folder inside its TMPDIR. */
export function processesOfRun(processes: ProcessFacts[], run: RunIdentity): ProcessFacts[] {
  const marker = `${RUN_ID_VARIABLE}=${run.runId}`;
  return processes.filter((p) => p.environ.split('\0').includes(marker) || p.command.includes(`${run.tmpDir}/`));
}

/**
 * What tools keep in TMPDIR on purpose — tsx's transform cache (`tsx-<uid>`), Node's module
 * compile cache (`node-compile-cache`, which npm's CLI turns on) and the run-wide registry of
 * handed-out ports (`port-reservations`, platform/free-port.ts) — is shared, not leaked.
 * Everything else a test made there should be gone when it ends.
 */
const CACHES = [/^tsx-\d+$/, /^node-compile-cache$/, /^port-reservations$/];

export function leftoverEntries(names: string[]): string[] {
  return names.filter((name) => !CACHES.some((cache) => cache.test(name))).sort();
}

/** The report printed at the end of `npm test`; empty when nothing was left behind. */
export function leakReport(processes: ProcessFacts[], entries: string[], tmpDir: string): string {
  const lines: string[] = [];
  if (processes.length) {
    lines.push(`${processes.length} process(es) started by the tests are still running (now killed):`);
    for (const p of processes) lines.push(`  pid ${p.pid}: ${p.command.slice(0, 200)}`);
  }
  if (entries.length) {
    lines.push(`${entries.length} temporary folder(s) or file(s) made by the tests were left in ${tmpDir} (now removed):`);
    for (const name of entries) lines.push(`  ${name}`);
  }
  return lines.join('\n');
}
