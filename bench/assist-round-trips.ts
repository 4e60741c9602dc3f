// `npx tsx bench/assist-round-trips.ts`: how many Redis commands and Postgres statements one
// answer of POST /v1/ai/assist costs. Starts ours (`npm start`'s main.ts, or dist/main.js with
// BENCH_OURS_BUILT=1) on a fresh database whose connections log every statement
// (`log_min_duration_statement=0` through libpq's `options` in the URL), sends a few answers one at
// a time, and counts what Redis's MONITOR and the Postgres server log saw in between.
// Needs DATABASE_URL, REDIS_URL and a readable Postgres log (BENCH_PG_LOG, default Debian's).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { newUlid } from '../platform/ids.js';
import { startFakeUpstream, startOurs } from './assist-ours.js';
import { benchKeys, freshDatabase, machine, type Proc } from './lib.js';

const TENANT = 'ten_01JDBENCHRTT0000000000000A';
const ANSWERS = Number(process.env.BENCH_ROUND_TRIP_ANSWERS ?? 5);
/** Answers in flight at once: above 1, concurrent answers may share statements (the record's group commit). */
const CONCURRENCY = Number(process.env.BENCH_ROUND_TRIP_CONCURRENCY ?? 1);
const PG_LOG = process.env.BENCH_PG_LOG ?? '/var/log/postgresql/postgresql-15-main.log';

const redisUrl = process.env.REDIS_URL;
if (!redisUrl) throw new Error('set REDIS_URL');
const db = await freshDatabase();
const keys = await benchKeys();
const procs: Array<Pick<Proc, 'stop'>> = [];
try {
  const upstream = await startFakeUpstream();
  procs.push(upstream.proc);
  const logged = new URL(db.url);
  logged.searchParams.set('options', '-c log_min_duration_statement=0');
  const database = logged.pathname.slice(1);
  const ours = await startOurs({
    name: 'ours',
    dir: process.env.BENCH_DIR,
    db,
    databaseUrl: logged.toString(),
    keys,
    upstream: upstream.url,
    tenant: TENANT,
  });
  procs.push(ours);
  const port = new URL(ours.base).port;
  const token = await keys.token(TENANT, 'ai.assist');
  const send = async () => {
    const response = await fetch(`http://127.0.0.1:${port}/v1/ai/assist`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        'x-tenant-id': TENANT,
        'idempotency-key': newUlid(),
      },
      body: JSON.stringify({
        featureKey: 'portal.triage',
        variables: { locale: 'en', message: 'I have had a headache for two days.' },
        context: { facilityId: 'fac-bench', specialty: 'general' },
      }),
    });
    if (response.status !== 200) throw new Error(`assist answered ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
  };
  // Warm: the snapshot cache, prepared statements, the first connections.
  for (let i = 0; i < 5; i++) await send();
  await new Promise((resolve) => setTimeout(resolve, 500));

  const monitor = spawn('redis-cli', ['-u', redisUrl, 'monitor'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let redisLines = '';
  monitor.stdout.on('data', (chunk: Buffer) => (redisLines += chunk.toString('utf8')));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const logStart = fs.statSync(PG_LOG).size;
  for (let sent = 0; sent < ANSWERS; sent += CONCURRENCY) {
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, ANSWERS - sent) }, send));
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
  monitor.kill('SIGTERM');
  const pgLines = fs
    .readFileSync(PG_LOG, 'utf8')
    .slice(logStart)
    .split('\n')
    .filter((line) => line.includes(`@${database} `) || line.includes(database));
  const statements = pgLines.filter((line) => /duration: [\d.]+ ms {2}(statement|execute|bind|parse)/.test(line));
  const byKind = new Map<string, number>();
  for (const line of statements) {
    const kind = /duration: [\d.]+ ms {2}(\w+)( [^:]*)?:/.exec(line)?.[1] ?? '?';
    byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
  }
  const commands = redisLines
    .split('\n')
    // MONITOR sees every client of the server: only the commands on this tenant's keys are ours.
    .filter((line) => /^\d+\.\d+ \[/.test(line) && line.includes(TENANT))
    // A command a script ran is marked [<db> lua]: it is no round trip of its own.
    .map(
      (line) =>
        `${/"([^"]+)"/.exec(line)?.[1]?.toLowerCase() ?? '?'}${/^\S+ \[\d+ lua\]/.test(line) ? ' (inside a script)' : ''}`,
    );
  const byCommand = new Map<string, number>();
  for (const command of commands) byCommand.set(command, (byCommand.get(command) ?? 0) + 1);
  const per = (n: number) => (n / ANSWERS).toFixed(2);
  const waves = CONCURRENCY === 1 ? 'one at a time' : `in waves of ${CONCURRENCY} at once`;
  console.log(`# assist round trips per answer\n\n${machine()}\n\n${ANSWERS} answers, ${waves}, after 5 to warm up.\n`);
  const trips = commands.filter((command) => !command.endsWith('(inside a script)')).length;
  console.log(`Redis round trips seen by MONITOR: ${trips} (${per(trips)} per answer); commands, scripts' own included:`);
  for (const [command, n] of byCommand) console.log(`- ${command}: ${per(n)} per answer`);
  console.log(`\nPostgres log lines of this database: ${statements.length} (${per(statements.length)} per answer)`);
  for (const [kind, n] of byKind) console.log(`- ${kind}: ${per(n)} per answer`);
  const executions = new Map<string, number>();
  for (const line of statements) {
    const name = /duration: [\d.]+ ms {2}execute ([^:]+):/.exec(line)?.[1]?.replace(/_[0-9a-f]{12}$/, '');
    if (name) executions.set(name, (executions.get(name) ?? 0) + 1);
  }
  console.log('\nExecutions by statement:\n');
  for (const [name, n] of executions) console.log(`- ${name}: ${per(n)} per answer`);
  console.log('\nThe Postgres lines (statement text cut at 160 characters):\n');
  for (const line of statements) console.log(`    ${line.replace(/^.*?duration:/, 'duration:').slice(0, 200)}`);
} finally {
  for (const proc of procs.reverse()) await proc.stop();
  await db.close();
}
process.exit(0);
