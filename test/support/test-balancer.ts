import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, type Dispatcher } from 'undici';

/**
 * A small HTTP load balancer for tests, behaving like a Kubernetes Service with readiness probes
 * or an HAProxy backend with health checks: it sends each request to the next replica in rotation,
 * keeps connections to the replicas alive, takes a replica out while its readiness path does not
 * answer 200 (probed every `intervalMs`), and retries a request on another replica only when the
 * connection could not be made at all (nothing of the request reached that replica).
 */
export interface Balancer {
  url: string;
  /** Requests it answered 502/503 because no replica could take them. */
  failures(): number;
  /** How many requests each replica served. */
  served(): Record<string, number>;
  close(): Promise<void>;
}

interface Replica {
  url: URL;
  ready: boolean;
  /** Probes in a row that got no answer (a slow machine, not a verdict): out after three, like HAProxy's `fall 3`. */
  silentProbes: number;
  served: number;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']);

export async function startBalancer(
  upstreams: string[],
  options: { readinessPath?: string; intervalMs?: number } = {},
): Promise<Balancer> {
  const replicas: Replica[] = upstreams.map((u) => ({ url: new URL(u), ready: true, silentProbes: 0, served: 0 }));
  const agent = new Agent({ connections: 64, keepAliveTimeout: 4_000 });
  let next = 0;
  let failures = 0;
  let closed = false;

  const probe = async (replica: Replica) => {
    try {
      const answer = await agent.request({
        origin: replica.url.origin,
        path: options.readinessPath ?? '/readyz',
        method: 'GET',
        headersTimeout: 2_000,
        bodyTimeout: 2_000,
      });
      await answer.body.dump();
      // An answer is a verdict: 503 (draining, a dependency down) takes the replica out at once.
      replica.ready = answer.statusCode === 200;
      replica.silentProbes = 0;
    } catch {
      replica.silentProbes += 1;
      if (replica.silentProbes >= 3) replica.ready = false;
    }
  };
  const probing = setInterval(() => void Promise.all(replicas.map(probe)), options.intervalMs ?? 200);
  await Promise.all(replicas.map(probe));

  const forward = async (replica: Replica, req: http.IncomingMessage, body: Buffer) => {
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    return agent.request({
      origin: replica.url.origin,
      path: req.url ?? '/',
      method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
      headers,
      body: body.length ? body : undefined,
    });
  };

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const ready = () => replicas.filter((r) => r.ready);
    for (let attempt = 0; attempt < replicas.length; attempt++) {
      const candidates = ready();
      if (candidates.length === 0) break;
      const replica = candidates[next++ % candidates.length];
      try {
        const answer = await forward(replica, req, body);
        const payload = Buffer.from(await answer.body.arrayBuffer());
        replica.served += 1;
        const out: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(answer.headers)) {
          if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
        }
        out['content-length'] = String(payload.length);
        res.writeHead(answer.statusCode, out);
        res.end(payload);
        return;
      } catch (error) {
        // Only a connection that was never made is safe to try elsewhere for any method.
        if ((error as { code?: string }).code !== 'ECONNREFUSED') {
          failures += 1;
          res.writeHead(502, { 'content-type': 'text/plain' });
          res.end(`balancer: ${(error as Error).message}`);
          return;
        }
        replica.ready = false;
      }
    }
    failures += 1;
    res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '1' });
    res.end('balancer: no replica is ready');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    failures: () => failures,
    served: () => Object.fromEntries(replicas.map((r) => [r.url.origin, r.served])),
    close: async () => {
      if (closed) return;
      closed = true;
      clearInterval(probing);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await agent.close();
    },
  };
}
