// A layer row of `assist-peer`: the AI subgraph's assist pipeline (quota reserve and settle in
// Redis, the keyed-effect lookup, the provider call, the one-statement record of provenance, audit
// outbox row and keyed effect) behind a bare node:http server. No front door (token check, request
// id, access log, Idempotency-Key record in Redis), no GraphQL (neither the gateway's execution nor
// the subgraph's), no outbox relay. It answers what any restructuring of the layers above the
// pipeline could reach at best. Run as its own process by bench/assist-peer.ts (env: the AI
// process's, plus PORT).
import 'reflect-metadata';
import http from 'node:http';
import { openPlatform } from '../platform/lifecycle/bootstrap.js';
import { effectClaim } from '../platform/idempotency/effect.logic.js';
import { connectRedis } from '../platform/redis.js';
import { loadAiProcessConfig } from '../processes/config.js';
import { databaseSchema } from '../prisma/migrate.js';
import { seedBaseline } from '../subgraphs/ai/seed.js';
import { createAiServices } from '../subgraphs/ai/services.js';

const SUBJECT = 'usr_bench';
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

const config = loadAiProcessConfig();
if (!config.redisUrl) throw new Error('bare-pipeline measures the quota in Redis: set REDIS_URL');
const platform = await openPlatform(config, 'ai', { schema: databaseSchema });
const redis = await connectRedis(config.redisUrl, platform.logger);
const db = platform.database.prisma;
await seedBaseline(db, { hostedModel: config.providers.openaiModel, logger: platform.logger });
const { assistPipeline } = createAiServices({ config, db, logger: platform.logger, redis });

let requests = 0;

/** One assist: the caller as the subgraph's context would build it, the effect keyed like a subgraph mutation's. */
async function assist(req: http.IncomingMessage, body: string): Promise<unknown> {
  const input = JSON.parse(body) as Parameters<typeof assistPipeline.run>[1];
  const tenantId = String(req.headers['x-tenant-id']);
  const key = req.headers['idempotency-key'];
  const effect =
    typeof key === 'string'
      ? effectClaim(
          { tenantId, subject: SUBJECT, field: 'assist', alias: 'assist', args: { input }, idempotencyKey: key },
          config.idempotencyTtlSeconds,
        )
      : undefined;
  requests += 1;
  return assistPipeline.run(
    {
      tenantId,
      subject: SUBJECT,
      requestId: `req_${requests}`,
      traceparent: TRACEPARENT,
      locales: ['en'],
      logger: platform.logger,
      effect,
    },
    input,
  );
}

const server = http.createServer((req, res) => {
  if (req.url === '/healthz') return void res.end('ok');
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    assist(req, Buffer.concat(chunks).toString('utf8')).then(
      (answer) => {
        const json = JSON.stringify(answer);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) }).end(json);
      },
      (error: unknown) => res.writeHead(500).end(String(error)),
    );
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  redis.disconnect();
  void platform.database.close().then(() => process.exit(0));
});
