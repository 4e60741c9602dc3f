import { STATUS_CODES } from 'node:http';
import { GraphQLError } from 'graphql';
import { Agent, type Dispatcher } from 'undici';
import type { Metrics } from '../platform/metrics.js';
import { subgraphFetchMetrics } from './metrics.js';
import { injectTraceHeaders, SpanKind, withSpan } from '../platform/telemetry.js';

/**
 * The connections to the subgraphs: kept alive between requests, and at most `maxPerSubgraph` to
 * each subgraph. A burst of client requests then waits in the gateway for a free connection instead
 * of opening a socket (and a request the subgraph must accept at once) per request in flight.
 */
export function subgraphDispatcher(maxPerSubgraph: number): Agent {
  return new Agent({ connections: maxPerSubgraph, keepAliveTimeout: 30_000, pipelining: 1 });
}

/** What Apollo Gateway's RemoteGraphQLDataSource passes its fetcher (@apollo/utils.fetcher's FetcherRequestInit). */
export interface SubgraphRequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  signal?: AbortSignal;
}

/**
 * The fetch the gateway uses per subgraph: a client span (its `traceparent` replaces the one the
 * request forwarded, so the subgraph's spans hang under this fetch), the fetch latency metric, and
 * a network failure turned into a clear subgraph.unavailable error for that subgraph's fields only.
 *
 * It sends with undici's `request` rather than its WHATWG `fetch`, whose streams, Request and
 * Response objects were the largest share of the gateway's own CPU under load (bench/README.md,
 * gateway profile): a subgraph answer is one small JSON document, read whole.
 */
export function subgraphFetcher(subgraph: string, dispatcher: Dispatcher, metrics?: Metrics) {
  const fetches = metrics && subgraphFetchMetrics(metrics);
  const targets = new TargetCache();
  return async (url: string, init: SubgraphRequestInit = {}): Promise<SubgraphResponse> =>
    withSpan(
      `subgraph ${subgraph}`,
      { 'graphql.subgraph.name': subgraph, 'url.full': url },
      async (span) => {
        const startedAt = process.hrtime.bigint();
        const seconds = () => Number(process.hrtime.bigint() - startedAt) / 1e9;
        const headers = injectTraceHeaders({ ...(init.headers ?? {}) });
        fetches?.inFlight.inc({ subgraph });
        try {
          const response = await send(dispatcher, url, targets.of(url), { ...init, headers });
          span.setAttribute('http.response.status_code', response.status);
          fetches?.duration.observe({ subgraph, outcome: response.ok ? 'ok' : 'error' }, seconds());
          return response;
        } catch (error) {
          fetches?.duration.observe({ subgraph, outcome: 'unavailable' }, seconds());
          // status and retryAfterSeconds let the REST door answer 503 + Retry-After (a retryable
          // outage), not the 500 an error without a declared status maps to.
          throw new GraphQLError(`The ${subgraph} service is unavailable; fields it serves are null`, {
            originalError: error as Error,
            extensions: { code: 'subgraph.unavailable', serviceName: subgraph, status: 503, retryAfterSeconds: 1 },
          });
        } finally {
          fetches?.inFlight.dec({ subgraph });
        }
      },
      { kind: SpanKind.CLIENT },
    );
}

interface Target {
  origin: string;
  path: string;
}

/** A subgraph's URL, parsed once (the gateway fetches the same one or two URLs per subgraph). */
class TargetCache {
  private readonly targets = new Map<string, Target>();

  of(url: string): Target {
    let target = this.targets.get(url);
    if (!target) {
      const parsed = new URL(url);
      target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
      if (this.targets.size < 16) this.targets.set(url, target);
    }
    return target;
  }
}

/** One request, its answer read whole (a body that fails mid-way fails the fetch, as a network error). */
async function send(dispatcher: Dispatcher, url: string, target: Target, init: SubgraphRequestInit): Promise<SubgraphResponse> {
  const answer = await dispatcher.request({
    ...target,
    method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
    headers: init.headers,
    body: init.body,
    signal: init.signal,
  });
  const body = await answer.body.text();
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return new SubgraphResponse(url, answer.statusCode, headers, body);
}

/**
 * A subgraph's answer, already read: the Response members RemoteGraphQLDataSource uses (status,
 * headers, text/json, and clone for its error path).
 */
export class SubgraphResponse {
  readonly redirected = false;
  private used = false;

  constructor(
    readonly url: string,
    readonly status: number,
    readonly headers: Headers,
    private readonly body: string,
  ) {}

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  get statusText(): string {
    return STATUS_CODES[this.status] ?? '';
  }

  get bodyUsed(): boolean {
    return this.used;
  }

  async text(): Promise<string> {
    this.used = true;
    return this.body;
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text()) as unknown;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = Buffer.from(await this.text(), 'utf8');
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  clone(): SubgraphResponse {
    return new SubgraphResponse(this.url, this.status, new Headers(this.headers), this.body);
  }
}
