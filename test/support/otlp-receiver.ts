import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { decodeTraceRequest } from './otlp-protobuf.js';

/** One span as an OTLP export carries it (ids in hex). */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  service: string;
  /** Every attribute of the span's resource (service.name, OTEL_RESOURCE_ATTRIBUTES, ...). */
  resource: Record<string, unknown>;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
}

/** One export request as it arrived: how it was encoded tells which OTLP protocol sent it. */
export interface ReceivedExport {
  path: string;
  contentType: string;
}

export interface OtlpReceiver {
  /**
   * Base URL to put in OTEL_EXPORTER_OTLP_ENDPOINT (spans are posted to /v1/traces over HTTP, or
   * sent to the TraceService over gRPC).
   */
  url: string;
  spans(): ReceivedSpan[];
  exports(): ReceivedExport[];
  /** Resolves once `predicate` holds for the received spans, or rejects after `timeoutMs`. */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}

interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: AnyValue }> };
    scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
  }>;
}

function value(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  return v.doubleValue;
}

function attributes(list: Array<{ key: string; value: AnyValue }> | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));
}

function spansOf(body: ExportRequest): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = attributes(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        traceId: span.traceId as string,
        spanId: span.spanId as string,
        parentSpanId: (span.parentSpanId as string | undefined) || undefined,
        name: span.name as string,
        kind: Number(span.kind),
        service: String(resource['service.name'] ?? ''),
        resource,
        attributes: attributes(span.attributes as never),
        links: ((span.links as Array<{ traceId: string; spanId: string }> | undefined) ?? []).map((l) => ({
          traceId: l.traceId,
          spanId: l.spanId,
        })),
      })),
    );
  });
}

const GRPC_EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

/**
 * A local OTLP receiver for traces, so tests see exactly what a collector would: OTLP/HTTP in the
 * JSON and the protobuf encodings (`http/json`, `http/protobuf`), or OTLP/gRPC with
 * `{ grpc: true }`.
 */
export async function startOtlpReceiver(options: { grpc?: boolean } = {}): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const exports: ReceivedExport[] = [];
  const listeners = new Set<() => void>();
  const accept = (path: string, contentType: string, body: ExportRequest) => {
    exports.push({ path, contentType });
    received.push(...spansOf(body));
    for (const listener of listeners) listener();
  };

  const { server, closeConnections } = options.grpc ? grpcServer(accept) : httpServer(accept);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    spans: () => [...received],
    exports: () => [...exports],
    waitFor: (predicate, timeoutMs) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(received)) return;
          cleanup();
          resolve([...received]);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`spans did not arrive within ${timeoutMs} ms; received: ${received.map((s) => s.name).join(', ')}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        closeConnections();
      }),
  };
}

type Accept = (path: string, contentType: string, body: ExportRequest) => void;

interface Receiver {
  server: http.Server | http2.Http2Server;
  /** Exporters keep their connection open; closing the receiver cuts them. */
  closeConnections(): void;
}

function httpServer(accept: Accept): Receiver {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const contentType = req.headers['content-type'] ?? '';
      const body = Buffer.concat(chunks);
      if (req.url !== '/v1/traces') return void res.writeHead(404).end();
      if (contentType.includes('json')) {
        accept(req.url, contentType, JSON.parse(body.toString('utf8')) as ExportRequest);
        return void res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      }
      if (contentType.includes('protobuf')) {
        accept(req.url, contentType, decodeTraceRequest(body) as ExportRequest);
        // An empty ExportTraceServiceResponse.
        return void res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      }
      res.writeHead(415).end();
    });
  });
  return { server, closeConnections: () => server.closeAllConnections() };
}

/** gRPC over cleartext HTTP/2: length-prefixed messages in, an empty response and status 0 out. */
function grpcServer(accept: Accept): Receiver {
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      const path = String(headers[':path']);
      const frame = Buffer.concat(chunks);
      if (path === GRPC_EXPORT_PATH && frame.length >= 5 && frame[0] === 0) {
        accept(
          path,
          String(headers['content-type']),
          decodeTraceRequest(frame.subarray(5, 5 + frame.readUInt32BE(1))) as ExportRequest,
        );
      }
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': path === GRPC_EXPORT_PATH ? '0' : '12' }));
      stream.end(Buffer.from([0, 0, 0, 0, 0]));
    });
  });
  return { server, closeConnections: () => sessions.forEach((session) => session.destroy()) };
}

/** The chain of spans from `span` up to the root of its trace (as far as received). */
export function ancestors(span: ReceivedSpan, spans: ReceivedSpan[]): ReceivedSpan[] {
  const byId = new Map(spans.filter((s) => s.traceId === span.traceId).map((s) => [s.spanId, s]));
  const chain: ReceivedSpan[] = [];
  let current = span.parentSpanId ? byId.get(span.parentSpanId) : undefined;
  while (current && chain.length < 100) {
    chain.push(current);
    current = current.parentSpanId ? byId.get(current.parentSpanId) : undefined;
  }
  return chain;
}
