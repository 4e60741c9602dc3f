// `npx tsx bench/rest-page-cpu.ts` (BENCH_OURS_BUILT=1 for the production build): the REST page
// (GET /api/v1/courses?limit=20, 1,000 courses) through the gateway at 64 connections, with the CPU
// each of our processes spends per page (gateway and catalog apart, from /proc). For an A/B of a
// change, run it from each checkout in turn (BENCH_ROUNDS rounds of BENCH_DURATION_SECONDS each).
import { cpuPerRequestMeter, DURATION, f, heading, measure, ROUNDS, table } from './lib.js';
import { BENCH_TENANT, seedCourses } from './seed.js';
import { startStack } from './stack.js';

const stack = await startStack({ seed: (db) => seedCourses(db.url, { courses: 1_000, versionsPerCourse: 1 }) });
try {
  const token = await stack.keys.token(BENCH_TENANT, 'catalog.read');
  const headers = { authorization: `Bearer ${token}`, 'x-tenant-id': BENCH_TENANT };
  const url = `${stack.gateway.url}/api/v1/courses?limit=20`;
  const answer = await fetch(url, { headers });
  if (answer.status !== 200) throw new Error(`the REST page answered ${answer.status}: ${await answer.text()}`);

  heading(`REST page CPU by process: GET /api/v1/courses?limit=20, 64 connections, ${DURATION} s per round`);
  const rows: Array<Array<string | number>> = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const gateway = cpuPerRequestMeter([stack.gateway]);
    const catalog = cpuPerRequestMeter([stack.catalog]);
    const result = await measure('REST page', {
      url,
      headers,
      connections: 64,
      beforeMeasuredRun: async () => {
        await gateway.start();
        await catalog.start();
      },
    });
    const gatewayMs = await gateway.perRequest(result.requests);
    const catalogMs = await catalog.perRequest(result.requests);
    rows.push([round, f(result.rps, 0), f(result.p99, 1), result.errors, f(gatewayMs, 3), f(catalogMs, 3), result.load]);
  }
  console.log(
    table(['>round', '>req/s', '>p99 ms', '>errors', '>gateway CPU ms / page', '>catalog CPU ms / page', 'load 1m'], rows),
  );
} finally {
  await stack.stop();
}
