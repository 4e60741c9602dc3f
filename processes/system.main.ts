import 'reflect-metadata';
import { startupBanner } from './banner.logic.js';
import { loadSystemConfig } from './config.js';
import { runProcess } from './run-process.js';
import { startSystem } from './system.js';
import { DEMO_TENANT_ID } from '../subgraphs/catalog/demo/demo-catalog.data.js';

// Every part in one process (processes/system.ts; `npm start` through main.ts), drained and stopped on SIGTERM/SIGINT.
await runProcess('main', loadSystemConfig, async (stack, config) => {
  const system = await startSystem(config, stack);
  console.log(
    startupBanner({
      gatewayUrl: system.gatewayUrl,
      catalogUrl: system.catalogUrl,
      aiUrl: system.aiUrl,
      opsUrl: system.opsUrl,
      database: config.databaseUrl ? 'DATABASE_URL' : `embedded Postgres under ${config.dataDir}/postgres`,
      runtime: `Node ${process.version}, pid ${process.pid}`,
      demoTenant: config.demoData ? DEMO_TENANT_ID : undefined,
      usesDevKey: !config.auth.jwksUrl && !config.auth.publicKey,
    }),
  );
});
