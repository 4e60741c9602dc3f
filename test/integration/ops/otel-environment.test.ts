import { afterEach, describe, expect, it } from 'vitest';
import { spawnEntry } from '../../support/entry-process.js';
import { startOtlpReceiver, type OtlpReceiver } from '../../support/otlp-receiver.js';

/**
 * The standard OpenTelemetry variables take effect: a process set up as every entry point does
 * (test/support/telemetry-probe.ts: one root span, one span under a sampled remote parent) exports
 * to a local receiver with the protocol, sampler and resource attributes the environment names.
 */
const SAMPLED_PARENT_TRACE = '0af7651916cd43dd8448eb211c80319c';

let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

async function probe(env: Record<string, string>, options: { grpc?: boolean; exitCode?: number } = {}) {
  receiver = await startOtlpReceiver(options);
  const child = spawnEntry('test/support/telemetry-probe.ts', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...env });
  const code = await child.exited;
  expect(code, child.output()).toBe(options.exitCode ?? 0);
  return { spans: receiver.spans(), exports: receiver.exports(), output: child.output() };
}

describe('OTEL_EXPORTER_OTLP_PROTOCOL', () => {
  it('defaults to http/protobuf, as the specification says', async () => {
    const { spans, exports } = await probe({});
    expect(exports.map((e) => [e.path, e.contentType])).toEqual([['/v1/traces', 'application/x-protobuf']]);
    expect(spans.map((s) => s.name).sort()).toEqual(['probe child', 'probe root']);
    expect(spans[0].service).toBe('catalog-ai-federation-probe');
  });

  it('http/json sends JSON', async () => {
    const { spans, exports } = await probe({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    expect(exports.map((e) => e.contentType)).toEqual(['application/json']);
    expect(spans).toHaveLength(2);
  });

  it('grpc calls the collector TraceService over HTTP/2', async () => {
    const { spans, exports } = await probe({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, { grpc: true });
    expect(exports.map((e) => [e.path, e.contentType])).toEqual([
      ['/opentelemetry.proto.collector.trace.v1.TraceService/Export', 'application/grpc'],
    ]);
    expect(spans.map((s) => s.name).sort()).toEqual(['probe child', 'probe root']);
  });

  it('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL wins over OTEL_EXPORTER_OTLP_PROTOCOL', async () => {
    const { exports } = await probe({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' });
    expect(exports.map((e) => e.contentType)).toEqual(['application/json']);
  });

  it('an unknown protocol stops start-up naming the variable', async () => {
    const { output, exports } = await probe({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/xml' }, { exitCode: 2 });
    expect(output).toContain('OTEL_EXPORTER_OTLP_PROTOCOL must be one of http/protobuf, http/json, grpc');
    expect(exports).toEqual([]);
  });
});

describe('OTEL_RESOURCE_ATTRIBUTES', () => {
  it('adds its attributes to every span and overrides the default service name', async () => {
    const { spans } = await probe({
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=catalog-eu,deployment.environment.name=staging,service.namespace=learning',
    });
    expect(spans).toHaveLength(2);
    for (const span of spans) {
      expect(span.service).toBe('catalog-eu');
      expect(span.resource).toMatchObject({ 'deployment.environment.name': 'staging', 'service.namespace': 'learning' });
    }
  });
});

describe('OTEL_TRACES_SAMPLER', () => {
  it('always_off records nothing, not even under a sampled parent', async () => {
    const { spans, exports } = await probe({ OTEL_TRACES_SAMPLER: 'always_off' });
    expect(spans).toEqual([]);
    expect(exports).toEqual([]);
  });

  it('parentbased_traceidratio with OTEL_TRACES_SAMPLER_ARG=0 drops new traces but follows a sampled parent', async () => {
    const { spans } = await probe({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
    expect(spans.map((s) => [s.name, s.traceId])).toEqual([['probe child', SAMPLED_PARENT_TRACE]]);
  });
});
