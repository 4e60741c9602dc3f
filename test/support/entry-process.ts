import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { childEnv } from './child-env.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface EntryProcess {
  pid: number;
  running(): boolean;
  /** Resolves with the exit code (-1 for a signal) once the process has exited. */
  exited: Promise<number | null>;
  /** Sends the signal and resolves on exit (SIGKILL after 30 s). */
  kill(signal: NodeJS.Signals): Promise<number | null>;
  output(): string;
}

/**
 * Runs one of the project's entry points (`subgraphs/catalog/worker.main.ts`, `gateway/main.ts`,
 * `subgraphs/ai/main.ts`, ...) through tsx, as `npm run start:*` does, with exactly the given
 * service variables. Resolves as soon as it is spawned; wait on `ready` for readiness.
 */
export function spawnEntry(entry: string, env: Record<string, string | undefined>): EntryProcess {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: ROOT,
    env: childEnv({ HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const record = (chunk: Buffer) => {
    log = (log + chunk.toString('utf8')).slice(-64 * 1024);
  };
  child.stdout?.on('data', record);
  child.stderr?.on('data', record);
  let done = false;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => {
      done = true;
      resolve(code ?? (signal ? -1 : null));
    }),
  );
  return {
    pid: child.pid ?? -1,
    running: () => !done,
    exited,
    async kill(signal) {
      if (done) return exited;
      child.kill(signal);
      const bound = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(bound);
      return code;
    },
    output: () => log,
  };
}

/** Polls `url` until it answers `status`; fails early with the output when the process exits. */
export async function waitForHttp(
  process: EntryProcess,
  url: string,
  what: string,
  timeoutMs = 90_000,
  status = 200,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!process.running()) throw new Error(`${what} exited before it was ready:\n${process.output()}`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status === status,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) {
      await process.kill('SIGKILL');
      throw new Error(`${what} was not ready within ${timeoutMs} ms:\n${process.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
