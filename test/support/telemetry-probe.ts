// Started by test/integration/ops/otel-environment.test.ts with a set of OTEL_* variables: sets up
// telemetry as every entry point does (configuration, then startTelemetry), records one root span
// and one span under a sampled remote parent, flushes and exits.
import { configOrExit } from '../../platform/lifecycle/entrypoint.js';
import { loadSystemConfig } from '../../processes/config.js';
import { extractContextFromHeaders, startTelemetry, telemetryOptions, withSpan } from '../../platform/observability/telemetry.js';

const SAMPLED_PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

const telemetry = startTelemetry(telemetryOptions(configOrExit(loadSystemConfig), 'probe'));
await withSpan('probe root', {}, () => undefined);
await withSpan('probe child', {}, () => undefined, { parent: extractContextFromHeaders({ traceparent: SAMPLED_PARENT }) });
await telemetry.shutdown();
