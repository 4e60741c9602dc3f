import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../../events/bus/jetstream-bus.js';
import { silentLogger } from '../../../platform/logger.js';
import { freePort } from '../../support/child-env.js';
import { spawnEntry } from '../../support/entry-process.js';
import { privateServicesAvailable, startPrivateNats, type PrivateNats } from '../../support/private-services.js';

/**
 * `npm run start:worker` in production mode (NATS_URL set) on a server where the producers have
 * not created their streams yet: it stops before changing anything, with one line naming them.
 * A nats-server of its own: the shared one may hold streams of these default names.
 */
describe.runIf(privateServicesAvailable('worker start', ['nats-server']))(
  'event worker start without the producers’ streams',
  () => {
    let nats: PrivateNats;
    let bus: EventBus;
    let dataDir: string;
    beforeAll(async () => {
      nats = await startPrivateNats();
      bus = await connectJetStreamBus(nats.url, { logger: silentLogger });
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'worker-start-'));
    });
    afterAll(async () => {
      await bus?.close();
      await nats?.destroy();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it('exits 1 with one line naming each missing stream, and creates none of its own', async () => {
      const worker = spawnEntry('processes/worker.main.ts', {
        NATS_URL: nats.url,
        DATA_DIR: dataDir,
        METRICS_PORT: String(await freePort()),
        CREATE_PRODUCER_STREAMS: undefined,
        OTEL_SDK_DISABLED: 'true',
      });
      const code = await Promise.race([
        worker.exited,
        new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 90_000).unref()),
      ]);
      if (code === 'running') await worker.kill('SIGKILL');
      expect(code, worker.output()).toBe(1);
      expect(worker.output()).toMatch(
        /Stream CONTENT \(content\.>\), Stream AUTHORING \(authoring\.>\), Stream GDPR \(gdpr\.>\) does not exist\..*CREATE_PRODUCER_STREAMS=true/,
      );
      expect(worker.output()).not.toMatch(/\n\s+at /);
      expect(await bus.streamConfig('CATALOG')).toBeUndefined();
    });
  },
);
