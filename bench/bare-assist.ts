// The limit of `assist-peer`: a bare Node http server that does per request what our assist path
// cannot do without — the same Redis quota reservation (our Lua script, one round trip), one call to
// the same fake OpenAI-compatible upstream, and one INSERT of the answer's record through `pg` —
// and nothing else: no token check, no GraphQL, no routing rules, no templates, no moderation, no
// idempotency, no audit event. Run as its own process by bench/assist-peer.ts
// (env: DATABASE_URL, REDIS_URL, UPSTREAM_URL, PORT, DB_POOL_SIZE).
import http from 'node:http';
import { Redis } from 'ioredis';
import pg from 'pg';
import { newUlid } from '../platform/ids.js';
import { createRedisQuotaStore } from '../subgraphs/ai/quota/quota.redis.js';

const TENANT = 'ten_01JDBENCHPEER000000000000A';
const LIMITS = { requestsPerMinute: 100_000_000, tokensPerDay: 0 };
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DB_POOL_SIZE ?? 10) });
const quota = createRedisQuotaStore(new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: 1 }));
const upstream = `${process.env.UPSTREAM_URL}/chat/completions`;

await pool.query(`CREATE TABLE IF NOT EXISTS bench_bare_assist (
  id text PRIMARY KEY, tenant_id text NOT NULL, output text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);

async function readBody(request: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function assist(body: string): Promise<{ id: string; text: string }> {
  const { variables } = JSON.parse(body) as { variables: { message: string } };
  const reservation = await quota.reserve({ tenantId: TENANT, limits: LIMITS, tokens: 0, nowMs: Date.now() });
  if (!reservation.admitted) throw new Error('quota refused');
  const answer = await fetch(upstream, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: variables.message }] }),
  });
  const completion = (await answer.json()) as { choices: Array<{ message: { content: string } }> };
  const text = completion.choices[0]!.message.content;
  const id = newUlid();
  await pool.query('INSERT INTO bench_bare_assist (id, tenant_id, output) VALUES ($1, $2, $3)', [id, TENANT, text]);
  return { id, text };
}

http
  .createServer((request, response) => {
    if (request.url === '/healthz') return void response.end('ok');
    readBody(request)
      .then(assist)
      .then((result) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ status: 'completed', ...result }));
      })
      .catch((error: unknown) => {
        response.writeHead(500, { 'content-type': 'text/plain' });
        response.end(String(error));
      });
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
