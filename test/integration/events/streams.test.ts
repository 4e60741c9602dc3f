import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, StorageType, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSystemConfig } from '../../../processes/config.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../../events/bus/jetstream-bus.js';
import { ensureStreams, streamSpecs } from '../../../events/streams.js';
import { natsServers } from '../../../platform/config/config.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { realService } from '../../support/services.js';
import { streamEnv, uniqueToken } from './helpers.js';

const natsUrl = realService('NATS_URL');
const DAY_NS = nanos(24 * 60 * 60 * 1000);

/**
 * Streams as operators configure them, on the real NATS (issue #16): the catalog creates what it
 * owns when missing, keeps what an operator set, and leaves the producers' streams alone outside
 * development mode. Every run uses stream names and subjects of its own.
 */
describe.runIf(natsUrl)('JetStream streams on start', () => {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let bus: EventBus;
  const made: string[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: natsServers(natsUrl!) });
    jsm = await jetstreamManager(nc);
    bus = await connectJetStreamBus(natsUrl!, { logger: silentLogger });
  });
  afterAll(async () => {
    for (const name of made) await jsm.streams.delete(name).catch(() => undefined);
    await bus?.close();
    await nc?.close();
  });

  /** A run's configuration as a production worker with NATS_URL reads it, plus `env`. */
  function setup(env: Record<string, string> = {}) {
    const token = uniqueToken();
    const config = loadSystemConfig({ NATS_URL: natsUrl, ...streamEnv(token), AI_STREAM: `AI_${token.toUpperCase()}`, ...env });
    const options = { subjectPrefix: `s${token}.`, storage: 'memory' as const };
    const specs = streamSpecs(config.events, options);
    made.push(...specs.map((s) => s.name));
    return { config, options, specs, spec: (name: string) => specs.find((s) => s.name === name)! };
  }

  /** What the content service (say) creates for itself, with its own settings. */
  async function producerCreates(name: string, subjects: string[]): Promise<StreamConfig> {
    return (
      await jsm.streams.add({
        name,
        subjects,
        storage: StorageType.Memory,
        max_age: 7 * DAY_NS,
        duplicate_window: nanos(30_000),
        max_msgs_per_subject: 1_000,
      })
    ).config;
  }

  it("never creates or edits a producer's stream outside development mode; a missing one stops the start, named", async () => {
    const { config, options, spec } = setup();
    expect(config.events.createProducerStreams).toBe(false);
    const content = spec(config.events.contentStream);
    const contentBefore = await producerCreates(content.name, [
      ...content.subjects,
      content.subjects[0].replace('content.', 'content-v0.'),
    ]);

    await expect(ensureStreams(bus, config, options)).rejects.toThrow(
      new RegExp(
        `^Stream ${config.events.authoringStream} .*, Stream ${config.events.gdprStream} .* does not exist.*CREATE_PRODUCER_STREAMS=true`,
      ),
    );
    // Nothing was created by the start that could not consume.
    expect(await bus.streamConfig(config.events.authoringStream)).toBeUndefined();
    expect(await bus.streamConfig(config.events.catalogStream)).toBeUndefined();

    for (const name of [config.events.authoringStream, config.events.gdprStream])
      await producerCreates(name, spec(name).subjects);
    const outcomes = await ensureStreams(bus, config, options);
    expect(Object.fromEntries(outcomes.map((o) => [o.name, o.outcome]))).toEqual({
      [config.events.catalogStream]: 'created',
      [config.events.dlqStream]: 'created',
      [config.events.auditStream]: 'created',
      [config.events.aiStream]: 'created',
      [config.events.contentStream]: 'present',
      [config.events.authoringStream]: 'present',
      [config.events.gdprStream]: 'present',
    });
    expect((await jsm.streams.info(content.name)).config).toEqual(contentBefore);
  });

  it('creates its own streams with STREAM_REPLICAS and then keeps the retention and window an operator set', async () => {
    const { config, options } = setup({ CREATE_PRODUCER_STREAMS: 'true' });
    await ensureStreams(bus, config, options);
    const catalog = config.events.catalogStream;
    expect((await jsm.streams.info(catalog)).config).toMatchObject({ num_replicas: 1, max_age: 30 * DAY_NS });
    // Development mode created the producers' streams too.
    expect(await bus.streamConfig(config.events.contentStream)).toBeDefined();

    await jsm.streams.update(catalog, { max_age: 60 * DAY_NS, duplicate_window: nanos(5 * 60_000) });
    const operated = (await jsm.streams.info(catalog)).config;
    const again = await ensureStreams(bus, config, options);
    expect(again.every((o) => o.outcome === 'unchanged')).toBe(true);
    expect((await jsm.streams.info(catalog)).config).toEqual(operated);

    // STREAM_REPLICAS reaches the server: a single node refuses three replicas.
    await jsm.streams.delete(catalog);
    const three = loadSystemConfig({ NATS_URL: natsUrl, ...streamEnv('x'), CATALOG_STREAM: catalog, STREAM_REPLICAS: '3' });
    await expect(bus.ensureStream({ ...streamSpecs(three.events, options)[0], name: catalog })).rejects.toThrow(/replicas/i);
  });
});
