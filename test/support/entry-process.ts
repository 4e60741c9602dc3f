import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { childEnv } from './child-env.js';
import { eventually } from './eventually.js';

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
 * Runs one of the project's entry points (`processes/worker.main.ts`, `processes/gateway.main.ts`,
 * `processes/ai.main.ts`, ...) through tsx, as `npm run start:*` does, with exactly the given
 * service variables. Resolves as soon as it is spawned; wait on `ready` for readiness.
 */
export function spawnEntry(entry: string, env: Record<string, string | undefined>, args: string[] = []): EntryProcess {
  return spawnNode(['--import', 'tsx', entry, ...args], env);
}

/** The `.js` file `npm run build` makes of an entry point: `processes/gateway.main.ts` → `dist/gateway/main.js`. */
export function builtEntry(entry: string): string {
  return `dist/${entry.replace(/\.ts$/, '.js')}`;
}

/**
 * Runs the built entry point as production does: plain `node dist/...`, no tsx, no NODE_PATH or
 * NODE_OPTIONS. `test/support/dev-only-guard.mjs` rides along and writes a `[dev-only module]` line
 * for each module loaded from a development-only package.
 */
export function spawnBuiltEntry(
  entry: string,
  env: Record<string, string | undefined>,
  options: {
    args?: string[];
    /** Where dist/ is: the project, or a folder laid out like a production image. */ root?: string;
  } = {},
): EntryProcess {
  const guard = fileURLToPath(new URL('./dev-only-guard.mjs', import.meta.url));
  return spawnNode(
    ['--import', guard, builtEntry(entry), ...(options.args ?? [])],
    { NODE_PATH: undefined, NODE_OPTIONS: undefined, ...env },
    options.root,
  );
}

function spawnNode(args: string[], env: Record<string, string | undefined>, cwd = ROOT): EntryProcess {
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd,
    // Tests play the producers (their streams are created) and see only the rows they make.
    env: childEnv({ HOST: '127.0.0.1', LOG_LEVEL: 'warn', CREATE_PRODUCER_STREAMS: 'true', DEMO_DATA: 'false', ...env }),
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
  const answers = async () => {
    const answer = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    if (answer.status !== status) throw new Error(`${url} answered ${answer.status}, not ${status}`);
  };
  try {
    await eventually(answers, what, {
      timeoutMs,
      intervalMs: 100,
      giveUpWhen: () => (process.running() ? undefined : new Error(`${what} exited before it was ready:\n${process.output()}`)),
    });
  } catch (error) {
    if (!process.running()) throw error;
    await process.kill('SIGKILL');
    throw new Error(`${what} was not ready within ${timeoutMs} ms:\n${process.output()}`, { cause: error });
  }
}
