// `npm run bench` runs every scenario; `npm run bench -- <name> [<name> ...]` only those.
// Each scenario starts what it needs on loopback, warms up, measures with bounded autocannon runs
// and prints a Markdown table headed by the machine, the date and the load average: the numbers
// only mean something as ratios within one run (see bench/README.md).
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { ROOT, machine } from './lib.js';

const SCENARIOS = [
  'gateway',
  'gateway-cache',
  'rest-list',
  'cache-staleness',
  'events',
  'assist',
  'assist-peer',
  'scale',
] as const;
type Scenario = (typeof SCENARIOS)[number];

const asked = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const unknown = asked.filter((a) => !SCENARIOS.includes(a as Scenario));
if (unknown.length) {
  console.error(`Unknown scenario ${unknown.join(', ')}; one of: ${SCENARIOS.join(', ')}`);
  process.exit(2);
}
if (!process.env.DATABASE_URL) {
  console.error('Set DATABASE_URL to a Postgres server (a fresh database is created there and dropped after).');
  process.exit(2);
}

// A hard bound on the whole run: a wedged child or broker must not leave a bench running forever.
const limitMinutes = Number(process.env.BENCH_TIMEOUT_MINUTES ?? 60);
setTimeout(() => {
  console.error(`bench: still running after ${limitMinutes} minutes; stopping (BENCH_TIMEOUT_MINUTES)`);
  process.exit(3);
}, limitMinutes * 60_000).unref();

console.log(`# bench ${new Date().toISOString()}\n\n${machine()}`);
const failed: string[] = [];
for (const name of asked.length ? (asked as Scenario[]) : SCENARIOS) {
  const started = Date.now();
  try {
    const scenario = (await import(pathToFileURL(path.join(ROOT, 'bench', `${name}.ts`)).href)) as { run(): Promise<void> };
    await scenario.run();
    console.log(`\n(${name}: ${Math.round((Date.now() - started) / 1000)} s)`);
  } catch (error) {
    failed.push(name);
    console.error(`\n${name} failed: ${(error as Error).stack ?? error}`, (error as Error).cause ?? '');
  }
}
process.exit(failed.length ? 1 : 0);
