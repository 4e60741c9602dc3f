// `npx tsx bench/startup.ts [<node binary> ...]`: start time (spawn to the first /readyz 200) and
// resident memory of the one-process system, per Node runtime, alternating runtimes round by round
// so both see the same machine. Two ways to start it: `npm start` (tsx's CLI on main.ts, its
// wrapper process included in the RSS) and the production build (`node dist/main.js`; run
// `npm run build` first). Embedded defaults on a warm DATA_DIR (created by a first, unmeasured
// start). Default runtimes: the machine's `node` on PATH and the pinned one in node_modules/.bin.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, f, freePort, machine, spawnNode, table, type Proc } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** RSS is read this long after ready, once start-up work (seed, first compilations) has settled. */
const SETTLE_MS = 3_000;

const runtimes = (
  process.argv.slice(2).length ? process.argv.slice(2) : [onPath('node'), path.join(ROOT, 'node_modules/.bin/node')]
).map((binary) => ({ binary, version: execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim() }));
const modes = [
  { name: 'npm start (tsx main.ts)', entry: 'node_modules/tsx/dist/cli.mjs', args: ['main.ts'] },
  { name: 'node dist/main.js', entry: 'dist/main.js', args: [] },
];
if (!fs.existsSync(path.join(ROOT, 'dist/main.js'))) {
  console.error('bench/startup.ts needs the production build: run `npm run build` first');
  process.exit(2);
}

function onPath(name: string): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && !dir.includes('node_modules') && fs.existsSync(candidate)) return candidate;
  }
  throw new Error(`${name} is not on PATH`);
}

async function startOnce(binary: string, mode: (typeof modes)[number], dataDir: string) {
  const [port, catalogPort, aiPort] = [await freePort(), await freePort(), await freePort()];
  const started = performance.now();
  const proc: Proc = await spawnNode('system', mode.entry, {
    nodePath: binary,
    tsx: false,
    args: mode.args,
    env: { DATA_DIR: dataDir, PORT: String(port), CATALOG_PORT: String(catalogPort), AI_PORT: String(aiPort) },
    readyUrl: `http://127.0.0.1:${port}/readyz`,
  });
  const readyMs = performance.now() - started;
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const rssMb = proc.rssMb();
  await proc.stop();
  return { readyMs, rssMb };
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-startup-'));
try {
  console.log(`# start time and memory per Node runtime\n\n${machine()}\n`);
  await startOnce(runtimes[runtimes.length - 1].binary, modes[1], dataDir);
  const samples = new Map<string, Array<{ readyMs: number; rssMb: number }>>();
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which runtime goes first, so neither always starts on a machine the other warmed.
    const order = round % 2 ? [...runtimes].reverse() : runtimes;
    for (const mode of modes) {
      for (const runtime of order) {
        const key = `${mode.name}|${runtime.version}`;
        samples.set(key, [...(samples.get(key) ?? []), await startOnce(runtime.binary, mode, dataDir)]);
      }
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const rows = [...samples].map(([key, runs]) => {
    const [mode, version] = key.split('|');
    return [
      mode,
      version,
      runs.length,
      f(median(runs.map((r) => r.readyMs)) / 1000, 2),
      `${f(Math.min(...runs.map((r) => r.readyMs)) / 1000, 2)}–${f(Math.max(...runs.map((r) => r.readyMs)) / 1000, 2)}`,
      f(median(runs.map((r) => r.rssMb)), 0),
    ];
  });
  console.log(table(['start', 'node', '>rounds', '>to /readyz 200, median s', '>min–max s', '>RSS after ready, MB'], rows));
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
