import 'reflect-metadata';
import { configOrExit, exitOnSignals, startOrExit } from './platform/entrypoint.js';
import { loadSystemConfig } from './processes/config.js';
import { startSystem } from './processes/system.js';
import { DEMO_TENANT_ID } from './subgraphs/catalog/demo/demo-catalog.data.js';
import { startTelemetry, telemetryOptions } from './platform/telemetry.js';

const config = configOrExit(loadSystemConfig);
// Before anything serves traffic, so the first request already has trace context.
const telemetry = startTelemetry(telemetryOptions(config, 'main'));
const system = await startOrExit(() => startSystem(config));
const usesDevKey = !config.auth.jwksUrl && !config.auth.publicKey;
console.log(`
  Catalog + AI gateway federation is up.
    GraphQL (gateway):   ${system.gatewayUrl}/graphql   (open it in a browser: Apollo Sandbox)
    REST-compat:         ${system.gatewayUrl}/api/v1/courses, ${system.gatewayUrl}/v1/ai/assist, ...
    Health, readiness:   ${system.gatewayUrl}/healthz, ${system.gatewayUrl}/readyz
    GraphiQL (offline):  ${system.gatewayUrl}/graphiql     Metrics: ${system.gatewayUrl}/metrics
    Subgraphs:           catalog ${system.catalogUrl}, ai ${system.aiUrl}
    Database:            ${config.databaseUrl ? 'DATABASE_URL' : `embedded PGlite under ${config.dataDir}`}
    Runtime:             Node ${process.version}, pid ${process.pid}${
      config.demoData ? `\n    Demo catalog:        tenant ${DEMO_TENANT_ID} (DEMO_DATA=false turns it off)` : ''
    }
  ${
    usesDevKey
      ? `Get a token signed by the development key:
    npm run token -- --tenant ten_01JD0000000000000000000000 --scope "catalog.read catalog.admin ai.assist ai.admin"
  then send:  Authorization: Bearer <token>   and   X-Tenant-Id: <the same tenant>`
      : 'Tokens are verified with AUTH_JWKS_URL / AUTH_PUBLIC_KEY: use tokens from your identity provider.'
  }
`);
exitOnSignals(
  system.platform.logger,
  async () => {
    await system.stop();
    await telemetry.shutdown();
  },
  config.ops.shutdownTimeoutMs,
);
