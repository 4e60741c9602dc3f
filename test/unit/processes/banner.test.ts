import { describe, expect, it } from 'vitest';
import { startupBanner, type BannerFacts } from '../../../processes/banner.logic.js';

const facts: BannerFacts = {
  gatewayUrl: 'http://127.0.0.1:4000',
  catalogUrl: 'http://127.0.0.1:4001/graphql',
  aiUrl: 'http://127.0.0.1:4002/graphql',
  database: 'DATABASE_URL',
  runtime: 'Node v24, pid 1',
  usesDevKey: true,
};

/** Issue #34: with METRICS_PORT the banner named /metrics on the gateway's port, which answers 404 there. */
describe('the start-up banner', () => {
  it('names /metrics on the ops port when METRICS_PORT moved it there', () => {
    const banner = startupBanner({ ...facts, opsUrl: 'http://127.0.0.1:9464' });
    expect(banner).toContain('Metrics: http://127.0.0.1:9464/metrics');
    expect(banner).not.toContain('http://127.0.0.1:4000/metrics');
    // The probes still answer on the door.
    expect(banner).toContain('http://127.0.0.1:4000/healthz, http://127.0.0.1:4000/readyz');
  });

  it('names /metrics on the gateway port otherwise', () => {
    expect(startupBanner(facts)).toContain('Metrics: http://127.0.0.1:4000/metrics');
  });
});
