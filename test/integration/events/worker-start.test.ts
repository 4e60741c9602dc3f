import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../../events/bus/jetstream-bus.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { freePort, processDataDir } from '../../support/child-env.js';
import { eventually } from '../../support/eventually.js';
import { spawnEntry } from '../../support/entry-process.js';
import { privateServicesAvailable, startPrivateNats, type PrivateNats } from '../../support/private-services.js';

/**
 * `npm run start:worker` in production mode (NATS_URL set) on a server where the producers have
 * not created their streams yet (issue #26): it waits, not ready, with one line naming them and
 * none of its own streams created, and starts once they exist. A crash loop would have the
 * orchestrator restart it until the producers are deployed. A nats-server of its own: the shared
 * one may hold streams of these default names.
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
      dataDir = processDataDir('worker-start-');
    });
    afterAll(async () => {
      await bus?.close();
      await nats?.destroy();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it('waits not ready naming each missing stream, creates none of its own, and starts once they exist', async () => {
      const opsPort = await freePort();
      const worker = spawnEntry('processes/worker.main.ts', {
        NATS_URL: nats.url,
        DATA_DIR: dataDir,
        METRICS_PORT: String(opsPort),
        CREATE_PRODUCER_STREAMS: undefined,
        OTEL_SDK_DISABLED: 'true',
      });
      try {
        const readyz = async () => {
          const response = await fetch(`http://127.0.0.1:${opsPort}/readyz`);
          return { status: response.status, report: (await response.json()) as { checks: Record<string, { detail?: string }> } };
        };
        const waiting = await eventually(
          async () => {
            const answer = await readyz();
            expect(answer.status).toBe(503);
            expect(answer.report.checks.events?.detail).toMatch(/does not exist/);
            return answer;
          },
          'the waiting worker to answer /readyz',
          { timeoutMs: 240_000 },
        );
        expect(waiting.report.checks.events?.detail).toMatch(
          /Stream CONTENT \(content\.>\), Stream AUTHORING \(authoring\.>\), Stream GDPR \(gdpr\.>\) does not exist\..*CREATE_PRODUCER_STREAMS=true/,
        );
        expect(worker.output()).toMatch(/event worker waiting: Stream CONTENT/);
        expect(worker.output()).not.toMatch(/\n\s+at /);
        expect(await bus.streamConfig('CATALOG')).toBeUndefined();

        // The producers deploy: their streams appear, and the worker starts on its next attempt.
        for (const [name, subject] of [
          ['CONTENT', 'content.>'],
          ['AUTHORING', 'authoring.>'],
          ['GDPR', 'gdpr.>'],
        ])
          await bus.ensureStream({ name, subjects: [subject], maxAgeMs: 3_600_000, storage: 'memory', replicas: 1 });
        await eventually(async () => expect((await readyz()).status).toBe(200), 'the worker to start', { timeoutMs: 60_000 });
        expect(await bus.streamConfig('CATALOG')).toMatchObject({ subjects: expect.arrayContaining(['catalog.>']) });
      } finally {
        await worker.kill('SIGTERM');
      }
    });
  },
);
