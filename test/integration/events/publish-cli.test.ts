import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../../events/bus/jetstream-bus.js';
import type { EventEnvelope } from '../../../events/envelope.js';
import { loadSchemaRegistry, type SchemaRegistry } from '../../../events/schemas/registry.js';
import { ensureStreams } from '../../../events/streams.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { childEnv } from '../../support/child-env.js';
import { privateServicesAvailable, startPrivateNats, type PrivateNats } from '../../support/private-services.js';
import { fixtureDraft } from '../catalog/harness.js';

const registry: SchemaRegistry = loadSchemaRegistry();

/** `npm run events:publish -- <args>`, to completion. */
function publishCli(args: string[], env: Record<string, string | undefined>) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'events/publish/publish.cli.ts', ...args], {
    cwd: path.resolve(import.meta.dirname, '../../..'),
    env: childEnv(env),
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/**
 * The operators' and testers' publisher, against a real nats-server of its own (it publishes on
 * the production subjects, which other suites' streams on the shared server may hold).
 */
describe.runIf(privateServicesAvailable('events:publish', ['nats-server']))('npm run events:publish', () => {
  let nats: PrivateNats;
  let bus: EventBus;
  let dir: string;
  const config = loadSystemConfig({});

  beforeAll(async () => {
    nats = await startPrivateNats();
    bus = await connectJetStreamBus(nats.url, { logger: silentLogger });
    await ensureStreams(bus, config, { storage: 'memory' });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'events-publish-'));
  });
  afterAll(async () => {
    await bus?.close();
    await nats?.destroy();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const write = (name: string, value: unknown) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, JSON.stringify(value));
    return file;
  };

  it('fills in the envelope (eventId, timestamps, schemaUri with digest) and publishes to NATS_URL', async () => {
    const draft = fixtureDraft('built');
    const run = publishCli([write('built.json', draft)], { NATS_URL: nats.url });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const [stored] = await bus.readStream(config.events.contentStream);
    const envelope = JSON.parse(Buffer.from(stored.data).toString('utf8')) as EventEnvelope;
    expect(run.stdout).toBe(`published: content.play_package.built.v1 eventId ${envelope.eventId} -> CONTENT #1\n`);
    expect(stored.subject).toBe('content.play_package.built.v1');
    expect(stored.headers['Nats-Msg-Id']).toBe(envelope.eventId);
    expect(envelope.eventId).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(envelope.schemaUri).toBe(registry.schemaUri('content.play_package.built', 1));
    expect(envelope).toMatchObject({ correlationId: envelope.eventId, causationId: envelope.eventId, source: draft.source });
    expect(Date.parse(envelope.occurredAt)).toBeGreaterThan(Date.now() - 120_000);
    expect(envelope.payload).toEqual(draft.payload);
    registry.validateEnvelope(envelope);
  });

  it('refuses, naming the problem, a payload its consumer would dead-letter, and runs only with NATS_URL', async () => {
    const draft = fixtureDraft('built');
    const { slug: _slug, ...withoutSlug } = draft.payload as Record<string, unknown>;
    const before = (await bus.streamState(config.events.contentStream)).messages;
    const bad = publishCli([write('bad.json', [draft, { ...draft, payload: withoutSlug }])], { NATS_URL: nats.url });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /bad\.json \[1\]: Invalid content\.play_package\.built v1 payload: \/slug must have required property 'slug'/,
    );
    expect((await bus.streamState(config.events.contentStream)).messages).toBe(before);

    const noNats = publishCli([write('ok.json', draft)], { NATS_URL: undefined });
    expect(noNats.code).toBe(2);
    expect(noNats.stderr).toMatch(/needs NATS_URL/);
    expect(publishCli(['--help'], {}).stdout).toMatch(/^Usage: npm run events:publish -- <file\.json>/);
  });

  it('on a fresh broker names the missing stream and how it comes to exist (not "jetstream is not enabled")', async () => {
    const fresh = await startPrivateNats();
    try {
      const run = publishCli([write('fresh.json', fixtureDraft('built'))], { NATS_URL: fresh.url });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(
        /^publish failed: no stream takes content\.play_package\.built\.v1: stream CONTENT \(content\.>\) does not exist\. .*CREATE_PRODUCER_STREAMS=true/,
      );
      expect(run.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await fresh.destroy();
    }
  });
});
