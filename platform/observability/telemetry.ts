import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { PrismaInstrumentation } from '@prisma/instrumentation';
import type { PlatformConfig, OtlpProtocol } from '../config/config.js';
import type { Logger } from './logger.js';
import { randomHex } from '../ids.js';

/**
 * OpenTelemetry for the whole process. OTel keeps its tracer provider, context manager and
 * propagator in process globals, so this is the one module that touches them; everything else uses
 * the helpers below.
 *
 * Context propagation (AsyncLocalStorage + W3C `traceparent`) is always on, so log lines, the
 * `traceparent` sent to subgraphs and the one put on NATS messages agree on one trace id. Spans are
 * recorded and exported only when an OTLP endpoint is configured. The standard variables are read by
 * the SDK packages themselves, not re-implemented here: the exporter of the chosen protocol reads
 * OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout, compression, certificates), the tracer provider
 * OTEL_TRACES_SAMPLER (+ `_ARG`; parent-based always-on by default) and the span limits, the batch
 * processor OTEL_BSP_*, the environment detector OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME.
 * Only the protocol, which picks the exporter package, is ours (validated by the configuration).
 * (@opentelemetry/sdk-node would do the same and more, but brings metrics and logs exporters for
 * every protocol too: about 80 MB more in a production install for nothing this service uses.)
 */
export interface TelemetryOptions {
  /**
   * Export spans over OTLP with this protocol; without `url` the exporter takes the endpoint and the
   * rest of its settings from the standard OTEL_EXPORTER_OTLP_* variables.
   */
  otlp?: { protocol: OtlpProtocol; url?: string };
  /** Shorthand for `otlp: { protocol: 'http/json', url }`, a full `…/v1/traces` URL (tests). */
  tracesUrl?: string;
  /** `service.name` unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES says otherwise. */
  serviceName: string;
  serviceInstance?: string;
  serviceVersion?: string;
}

export interface Telemetry {
  readonly exporting: boolean;
  /** Flushes pending spans to the exporter; call it last on shutdown. */
  shutdown(): Promise<void>;
}

const TRACER_NAME = 'catalog-ai-federation';

/** Exports when an OTLP endpoint is set (and OTEL_SDK_DISABLED is not); named after the process. */
export function telemetryOptions(config: PlatformConfig, processName: string): TelemetryOptions {
  const otel = config.ops.otel;
  return {
    otlp: otel.tracesUrl ? { protocol: otel.protocol } : undefined,
    serviceName: `catalog-ai-federation-${processName}`,
    serviceInstance: config.service.instance,
    serviceVersion: config.service.commit,
  };
}

let started: Telemetry | undefined;

/**
 * Call before anything handles traffic (main.ts and each entry point do it right after reading the
 * configuration). Only one setup per process: a second call returns the first.
 */
export function startTelemetry(options: TelemetryOptions): Telemetry {
  if (started) return started;
  const otlp = options.otlp ?? (options.tracesUrl ? { protocol: 'http/json' as const, url: options.tracesUrl } : undefined);
  started = otlp ? startExporting(options, otlpExporter(otlp.protocol, otlp.url)) : startPropagationOnly();
  return started;
}

function startPropagationOnly(): Telemetry {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  return { exporting: false, shutdown: async () => {} };
}

function otlpExporter(protocol: OtlpProtocol, url: string | undefined): SpanExporter {
  const config = url ? { url } : {};
  if (protocol === 'grpc') return new GrpcTraceExporter(config);
  if (protocol === 'http/json') return new JsonTraceExporter(config);
  return new ProtobufTraceExporter(config);
}

function startExporting(options: TelemetryOptions, exporter: SpanExporter): Telemetry {
  const provider = new NodeTracerProvider({
    // Our defaults, then what OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME say: an operator wins.
    resource: defaultResource()
      .merge(
        resourceFromAttributes({
          'service.name': options.serviceName,
          ...(options.serviceInstance ? { 'service.instance.id': options.serviceInstance } : {}),
          ...(options.serviceVersion ? { 'service.version': options.serviceVersion } : {}),
        }),
      )
      .merge(detectResources({ detectors: [envDetector] })),
    // No sampler given: the provider builds the one OTEL_TRACES_SAMPLER names.
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  // Prisma 7 reports its spans through a global helper this sets (no module patching involved),
  // so the order of imports does not matter for database spans.
  const prisma = new PrismaInstrumentation({ enabled: false, ignoreSpanTypes: ['prisma:client:serialize'] });
  prisma.setTracerProvider(provider);
  prisma.enable();
  let shutdown: Promise<void> | undefined;
  return {
    exporting: true,
    shutdown: () =>
      (shutdown ??= (async () => {
        prisma.disable();
        await provider.shutdown();
      })()),
  };
}

/**
 * The last step of a shutdown: flush what is left to the collector, for at most `timeoutMs`. A
 * collector that cannot be reached is logged and given up on, never a failed shutdown (issue #23:
 * with the collector down, SIGTERM took 8.9 s and exited 1).
 */
export async function flushTelemetry(telemetry: Telemetry, logger: Logger, timeoutMs = 2_000): Promise<void> {
  if (!telemetry.exporting) return;
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
    timer.unref();
  });
  try {
    const outcome = await Promise.race([telemetry.shutdown().then(() => 'flushed' as const), gaveUp]);
    if (outcome === 'timeout')
      logger.warn({ timeoutMs }, 'trace export did not finish in time; spans still buffered are dropped');
  } catch (error) {
    logger.warn({ err: (error as Error).message }, 'trace export failed at shutdown; spans still buffered are dropped');
  } finally {
    clearTimeout(timer);
  }
}

/** Flushes and stops the process's telemetry, if any was started. */
export async function shutdownTelemetry(): Promise<void> {
  await started?.shutdown();
}

function tracer() {
  return trace.getTracer(TRACER_NAME);
}

type HeaderBag = Record<string, string | string[] | undefined>;

const headerGetter = {
  keys: (carrier: HeaderBag) => Object.keys(carrier),
  get: (carrier: HeaderBag, key: string) => {
    const direct = carrier[key] ?? carrier[Object.keys(carrier).find((name) => name.toLowerCase() === key) ?? ''];
    return Array.isArray(direct) ? direct[0] : direct;
  },
};

/** The trace context a producer or caller put in headers (HTTP or NATS), as a parent context. */
export function extractContextFromHeaders(headers: HeaderBag, base: Context = ROOT_CONTEXT): Context {
  return propagation.extract(base, headers, headerGetter);
}

/** Writes `traceparent` (and `tracestate`) of the active span into outgoing headers. */
export function injectTraceHeaders<T extends Record<string, string>>(headers: T, from: Context = context.active()): T {
  propagation.inject(from, headers);
  return headers;
}

/** The active trace as a `traceparent`, when there is one. */
export function activeTraceparent(from: Context = context.active()): { traceparent: string; traceId: string } | undefined {
  const span = trace.getSpanContext(from);
  if (!span || !trace.isSpanContextValid(span)) return undefined;
  const flags = (span.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? '01' : '00';
  return { traceparent: `00-${span.traceId}-${span.spanId}-${flags}`, traceId: span.traceId };
}

export interface SpanOptions {
  kind?: SpanKind;
  /** Parent context; the active one when omitted. */
  parent?: Context;
  links?: Link[];
}

/**
 * Runs `fn` inside a new active span, ending it when `fn` settles; a thrown error marks the span
 * failed (with the exception's type, never its message, which may carry user text) and is rethrown.
 */
export async function withSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T> | T,
  options: SpanOptions = {},
): Promise<T> {
  const parent = options.parent ?? context.active();
  return tracer().startActiveSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes, links: options.links },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        markFailed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

export function markFailed(span: Span, error: unknown): void {
  const code = (error as { code?: unknown } | undefined)?.code;
  span.setStatus({ code: SpanStatusCode.ERROR, message: typeof code === 'string' ? code : undefined });
  span.setAttribute('error.type', typeof code === 'string' ? code : ((error as Error | undefined)?.name ?? 'Error'));
}

/**
 * The span of one consumed message: a child of the producer's trace (from the message's
 * `traceparent` header) and linked to it, so the consumer's work, its database writes and the events
 * it emits are found from the producing request.
 */
export async function withMessageSpan<T>(
  message: { subject: string; headers: HeaderBag; deliveryCount?: number; consumer?: string },
  fn: (span: Span) => Promise<T> | T,
): Promise<T> {
  const producer = extractContextFromHeaders(message.headers);
  const producerSpan = trace.getSpanContext(producer);
  const links = producerSpan && trace.isSpanContextValid(producerSpan) ? [{ context: producerSpan }] : [];
  const attributes: Attributes = {
    'messaging.system': 'nats',
    'messaging.operation.type': 'process',
    'messaging.destination.name': message.subject,
    ...(message.consumer ? { 'messaging.consumer.group.name': message.consumer } : {}),
    ...(message.deliveryCount ? { 'messaging.delivery.count': message.deliveryCount } : {}),
  };
  return withSpan(`process ${message.subject}`, attributes, fn, { kind: SpanKind.CONSUMER, parent: producer, links });
}

/**
 * Starts the span of one incoming HTTP request under the caller's trace. When nothing is exported a
 * non-recording span still carries a fresh span id (and a new trace id if the caller sent none), so
 * logs and forwarded `traceparent` headers keep working without an exporter.
 */
export function startServerSpan(name: string, headers: HeaderBag, attributes: Attributes): { span: Span; context: Context } {
  const parent = extractContextFromHeaders(headers);
  let span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  if (!span.isRecording()) {
    const caller = trace.getSpanContext(parent);
    const valid = caller && trace.isSpanContextValid(caller);
    span = trace.wrapSpanContext({
      traceId: valid ? caller.traceId : randomHex(16),
      spanId: randomHex(8),
      traceFlags: valid ? caller.traceFlags : TraceFlags.SAMPLED,
    });
  }
  return { span, context: trace.setSpan(parent, span) };
}

export { context as otelContext, SpanKind, SpanStatusCode, trace as otelTrace };
export type { Context, Span, Attributes };
