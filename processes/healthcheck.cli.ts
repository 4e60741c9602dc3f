// The image's HEALTHCHECK: healthy when this container's part answers /healthz on its port. The
// part is not known here (it is the container's command), so each part's port is asked in turn;
// the first that answers 200 decides. Orchestrators use /healthz and /readyz directly instead.
import { loadPlatformConfig } from '../platform/config/config.js';
import { WORKER_OPS_PORT } from './parts.js';

const config = loadPlatformConfig();
const ports = [config.port, config.catalogPort, config.aiPort, config.ops.metricsPort ?? WORKER_OPS_PORT];

async function answers(port: number): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) });
    return response.status === 200;
  } catch {
    return false;
  }
}

const results = await Promise.all(ports.map(answers));
process.exit(results.some(Boolean) ? 0 : 1);
