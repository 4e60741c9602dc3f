import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../../events/bus/jetstream-bus.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { childEnv, freePort, processDataDir } from '../../support/child-env.js';
import { spawnEntry, waitForHttp } from '../../support/entry-process.js';
import { eventually } from '../../support/eventually.js';
import { privateServicesAvailable, startPrivateNatsCluster, type PrivateNatsCluster } from '../../support/private-services.js';
import { fixtureDraft } from '../catalog/harness.js';

const STREAMS = ['CATALOG', 'CATALOG_DLQ', 'CONTENT', 'AUTHORING', 'GDPR', 'AUDIT', 'AI'];
const ROOT = path.resolve(import.meta.dirname, '../../..');

/**
 * NATS_URL as a server list against a 3-node JetStream cluster of its own (the Debian
 * nats-server, clustered on loopback) whose FIRST listed node is down: the other two keep the
 * quorum, and every process that reads NATS_URL starts on whichever listed server answers.
 */
describe.runIf(privateServicesAvailable('NATS cluster', ['nats-server']))('NATS_URL as a server list', () => {
  let cluster: PrivateNatsCluster;
  let bus: EventBus;
  let dataDir: string;

  beforeAll(async () => {
    cluster = await startPrivateNatsCluster();
    dataDir = processDataDir('nats-cluster-');
  });
  afterAll(async () => {
    await bus?.close();
    await cluster?.destroy();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** `npm run start:worker` on the cluster's list, until it is ready (streams and consumers in place); then stopped. */
  async function runWorker(what: string): Promise<string> {
    const metricsPort = await freePort();
    const worker = spawnEntry('processes/worker.main.ts', {
      NATS_URL: cluster.url,
      DATA_DIR: dataDir,
      METRICS_PORT: String(metricsPort),
      STREAM_REPLICAS: '3',
      OTEL_SDK_DISABLED: 'true',
    });
    try {
      await waitForHttp(worker, `http://127.0.0.1:${metricsPort}/readyz`, what);
      return worker.output();
    } finally {
      await worker.kill('SIGTERM');
    }
  }

  it('restarts a worker while the first listed server is down: it serves on the other two', async () => {
    // The worker ran before: its streams (3 replicas) and durable consumers exist.
    await runWorker('the worker on the whole cluster');
    expect(cluster.url.split(',')[0]).toBe(cluster.node('n1').url);
    await cluster.node('n1').stop('SIGKILL');
    // Until the two left elect a meta leader (when n1 was it), JetStream's API does not answer;
    // then each stream whose leader was on n1 elects another.
    bus = await eventually(() => connectJetStreamBus(cluster.url, { logger: silentLogger }), 'JetStream on n2 and n3');
    await eventually(() => Promise.all(STREAMS.map((name) => bus.streamState(name))), 'a leader for every stream');

    const output = await runWorker('the worker with n1 down');
    expect(output).not.toMatch(/NATS_URL/);
    expect(await bus.streamConfig('CATALOG')).toMatchObject({ replicas: 3 });
    // Two worker starts on an embedded database: more than the project's 60 s on a loaded machine.
  }, 240_000);

  it('publishes with `npm run events:publish` through the same list', () => {
    const file = path.join(dataDir, 'built.json');
    fs.writeFileSync(file, JSON.stringify(fixtureDraft('built')));
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'events/publish/publish.cli.ts', file], {
      cwd: ROOT,
      env: childEnv({ NATS_URL: cluster.url }),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^published: content\.play_package\.built\.v1 eventId \S+ -> CONTENT #1/);
  });
});
