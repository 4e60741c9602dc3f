import 'reflect-metadata';
import { ConfigError, loadConfig } from './platform/config/config.js';
import { startSystem } from './system.js';

let config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  throw error;
}

const system = await startSystem(config);
const { logger } = system.platform;
const embedded = !config.databaseUrl;
console.log(`
  Catalog + AI gateway federation is up.
    GraphQL (gateway):     ${system.gatewayUrl}/graphql   (open it in a browser for Apollo Sandbox)
    REST-compat:           ${system.gatewayUrl}/api/v1/courses, ${system.gatewayUrl}/v1/ai/assist, ...
    Health / readiness:    ${system.gatewayUrl}/healthz, ${system.gatewayUrl}/readyz
    Subgraphs:             catalog ${system.catalogUrl}, ai ${system.aiUrl}
    Database:              ${embedded ? `embedded PGlite under ${config.dataDir}` : 'DATABASE_URL'}
  Get a token (development key${config.auth.jwksUrl || config.auth.publicKey ? ' — NOT accepted here: this process verifies with your identity provider' : ''}):
    npm run token -- --tenant ten_01JD0000000000000000000000 --scope "catalog.read catalog.admin ai.assist ai.admin"
  then send:  Authorization: Bearer <token>   and   X-Tenant-Id: <the same tenant>
`);

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down');
  const timer = setTimeout(() => {
    logger.error('shutdown took too long; exiting');
    process.exit(1);
  }, 20_000);
  timer.unref();
  await system.stop();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
