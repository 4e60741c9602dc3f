// `DATABASE_URL=... npx tsx bench/relay-round-cost.ts`: what one outbox relay round costs the
// database server, with the relay's statements named (prepared once per connection, the default)
// and unnamed (DB_PREPARED_STATEMENTS=false: parsed and planned on every round, as before
// 2026-11-28). Each round relays one row written just before it, the shape of a relay woken by
// each commit (assist's audit events, a catalog write); the relay's client has one connection, so
// the CPU its server backend spent (/proc/<pid>/stat, the server must be on this machine) is the
// relay's alone. Alternating modes, a fresh database each.
import fs from 'node:fs';
import { createInProcessBus } from '../events/bus/in-process-bus.js';
import { createOutboxRelay } from '../events/publish/outbox-relay.js';
import { ensureStreams } from '../events/streams.js';
import { createPrismaClient } from '../platform/db/database.js';
import { silentLogger } from '../platform/observability/logger.js';
import { loadSystemConfig } from '../processes/config.js';
import { freshDatabase, heading, table } from './lib.js';

const ROUNDS = Number(process.env.BENCH_RELAY_ROUNDS ?? 500);
const REPEATS = Number(process.env.BENCH_ROUNDS ?? 3);
const TICKS_PER_SECOND = 100;
const config = loadSystemConfig({});

/** utime + stime of a local process, in ms. */
function cpuMsOf(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

async function measure(preparedStatements: boolean): Promise<{ serverMsPerRound: number; clientMsPerRound: number }> {
  const db = await freshDatabase(2);
  const relayDb = createPrismaClient(db.url, 1, { preparedStatements });
  const bus = createInProcessBus();
  try {
    await ensureStreams(bus, config, { storage: 'memory' });
    const relay = createOutboxRelay({ db: relayDb, bus, logger: silentLogger });
    const [{ pid }] = await relayDb.$queryRaw<Array<{ pid: number }>>`SELECT pg_backend_pid() AS pid`;
    const writeOne = (i: number) =>
      db.prisma
        .$executeRaw`INSERT INTO "OutboxEvent" ("eventId", "eventType", "eventVersion", subject, "tenantId", "partitionKey", envelope, headers)
        VALUES (${`bench-${preparedStatements}-${i}`}, 'audit.bench_probe', 1, 'audit.bench.probe', 'tenant-bench', ${`p${i % 7}`}, '{}'::jsonb, '{}'::jsonb)`;
    for (let i = 0; i < 50; i++) {
      await writeOne(-1 - i);
      await relay.runOnce();
    }
    let clientMs = 0;
    const serverBefore = cpuMsOf(pid);
    for (let i = 0; i < ROUNDS; i++) {
      await writeOne(i);
      const cpu = process.cpuUsage();
      const run = await relay.runOnce();
      const used = process.cpuUsage(cpu);
      clientMs += (used.user + used.system) / 1000;
      if (run.published !== 1) throw new Error(`round ${i} published ${run.published} rows, not 1`);
    }
    return { serverMsPerRound: (cpuMsOf(pid) - serverBefore) / ROUNDS, clientMsPerRound: clientMs / ROUNDS };
  } finally {
    await relayDb.$disconnect();
    await bus.close();
    await db.close();
  }
}

const rows: Array<Array<string | number>> = [];
for (let repeat = 1; repeat <= REPEATS; repeat++) {
  for (const named of repeat % 2 === 1 ? [false, true] : [true, false]) {
    const { serverMsPerRound, clientMsPerRound } = await measure(named);
    rows.push([repeat, named ? 'named (prepared)' : 'unnamed', ROUNDS, serverMsPerRound.toFixed(3), clientMsPerRound.toFixed(3)]);
  }
}
heading(`outbox relay: one round's cost, relay statements named or not, ${ROUNDS} rounds of one row`);
console.log(
  table(['>repeat', "relay's statements", '>rounds', '>server backend CPU ms per round', '>relay client CPU ms per round'], rows),
);
