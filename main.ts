import 'reflect-metadata';
import { loadSystemConfig } from './processes/config.js';
import { runProcess } from './processes/run-process.js';
import { startSystem } from './processes/system.js';
import { DEMO_TENANT_ID } from './subgraphs/catalog/demo/demo-catalog.data.js';

// `npm start`: every part in one process (processes/system.ts), drained and stopped on SIGTERM/SIGINT.
await runProcess('main', loadSystemConfig, async (stack, config) => {
  const system = await startSystem(config, stack);
  const usesDevKey = !config.auth.jwksUrl && !config.auth.publicKey;
  console.log(`
  Catalog + AI gateway federation is up.
    GraphQL (gateway):   ${system.gatewayUrl}/graphql   (open it in a browser: Apollo Sandbox)
    REST-compat:         ${system.gatewayUrl}/api/v1/courses, ${system.gatewayUrl}/v1/ai/assist, ...
    Health, readiness:   ${system.gatewayUrl}/healthz, ${system.gatewayUrl}/readyz
    GraphiQL (offline):  ${system.gatewayUrl}/graphiql     Metrics: ${system.gatewayUrl}/metrics
    Subgraphs:           catalog ${system.catalogUrl}, ai ${system.aiUrl}
    Database:            ${config.databaseUrl ? 'DATABASE_URL' : `embedded Postgres under ${config.dataDir}/postgres`}
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
});
