import { describe, expect, it } from 'vitest';
import { loadSystemConfig } from '../../../processes/config.js';
import { streamChanges } from '../../../events/bus/stream-config.logic.js';
import { streamSpecs } from '../../../events/streams.js';

describe('stream reconciliation on start', () => {
  it('changes nothing on a stream that already serves the service', () => {
    expect(streamChanges({ subjects: ['catalog.>'], replicas: 3 }, { subjects: ['catalog.>'], replicas: 3 })).toBeUndefined();
    // Subjects an operator added stay; replicas above the configured count stay.
    expect(
      streamChanges({ subjects: ['catalog.>', 'legacy.>'], replicas: 3 }, { subjects: ['catalog.>'], replicas: 1 }),
    ).toBeUndefined();
  });

  it('adds missing subjects and raises replicas, never lowers them', () => {
    expect(streamChanges({ subjects: ['legacy.>'], replicas: 1 }, { subjects: ['catalog.>'], replicas: 1 })).toEqual({
      subjects: ['legacy.>', 'catalog.>'],
      replicas: 1,
    });
    expect(streamChanges({ subjects: ['catalog.>'], replicas: 1 }, { subjects: ['catalog.>'], replicas: 3 })).toEqual({
      subjects: ['catalog.>'],
      replicas: 3,
    });
    expect(streamChanges({ subjects: ['catalog.>'], replicas: 5 }, { subjects: ['catalog.>', 'x.>'], replicas: 3 })).toEqual({
      subjects: ['catalog.>', 'x.>'],
      replicas: 5,
    });
  });
});

describe('stream settings', () => {
  it('STREAM_REPLICAS sets the replicas of created streams (default 1, 1 to 5)', () => {
    expect(streamSpecs(loadSystemConfig({}).events).every((s) => s.replicas === 1)).toBe(true);
    expect(streamSpecs(loadSystemConfig({ STREAM_REPLICAS: '3' }).events).every((s) => s.replicas === 3)).toBe(true);
    expect(() => loadSystemConfig({ STREAM_REPLICAS: '0' })).toThrow(/STREAM_REPLICAS/);
    expect(() => loadSystemConfig({ STREAM_REPLICAS: '7' })).toThrow(/STREAM_REPLICAS/);
  });

  it("names which streams are the catalog's and which the producers'", () => {
    const owners = Object.fromEntries(streamSpecs(loadSystemConfig({}).events).map((s) => [s.name, s.owner]));
    expect(owners).toEqual({
      CATALOG: 'catalog',
      CATALOG_DLQ: 'catalog',
      AUDIT: 'catalog',
      AI: 'catalog',
      CONTENT: 'producer',
      AUTHORING: 'producer',
      GDPR: 'producer',
    });
  });

  it("creates the producers' streams in development mode only: by default without NATS_URL, never with it unless asked", () => {
    expect(loadSystemConfig({}).events.createProducerStreams).toBe(true);
    expect(loadSystemConfig({ NATS_URL: 'nats://nats:4222' }).events.createProducerStreams).toBe(false);
    expect(loadSystemConfig({ NATS_URL: 'nats://nats:4222', CREATE_PRODUCER_STREAMS: 'true' }).events.createProducerStreams).toBe(
      true,
    );
    expect(loadSystemConfig({ CREATE_PRODUCER_STREAMS: 'false' }).events.createProducerStreams).toBe(false);
  });

  it('publishes the demo catalog by default only when nothing real is configured', () => {
    expect(loadSystemConfig({}).demoData).toBe(true);
    expect(loadSystemConfig({ DATABASE_URL: 'postgres://db/catalog' }).demoData).toBe(false);
    expect(loadSystemConfig({ NATS_URL: 'nats://nats:4222' }).demoData).toBe(false);
    expect(loadSystemConfig({ DATABASE_URL: 'postgres://db/catalog', DEMO_DATA: 'true' }).demoData).toBe(true);
    expect(loadSystemConfig({ DEMO_DATA: 'false' }).demoData).toBe(false);
    expect(() => loadSystemConfig({ DEMO_DATA: 'maybe' })).toThrow(/DEMO_DATA/);
  });
});
