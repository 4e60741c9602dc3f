import { describe, expect, it } from 'vitest';
import { ConfigError, natsServers } from '../../../platform/config/config.js';
import { redactUrl } from '../../../platform/reach-dependency.js';
import { loadSystemConfig, loadWorkerProcessConfig } from '../../../processes/config.js';

/** NATS_URL as the NATS clients take it: one server, or a comma-separated list of them. */
describe('NATS_URL', () => {
  it('takes a comma-separated server list, as every process that reads NATS_URL does', () => {
    const list = 'nats://n1:4222, nats://n2:4222 ,tls://n3:4222';
    expect(loadSystemConfig({ NATS_URL: list }).natsUrl).toBe('nats://n1:4222,nats://n2:4222,tls://n3:4222');
    expect(natsServers(loadWorkerProcessConfig({ NATS_URL: list }).natsUrl!)).toEqual([
      'nats://n1:4222',
      'nats://n2:4222',
      'tls://n3:4222',
    ]);
    expect(loadSystemConfig({ NATS_URL: 'nats://127.0.0.1:4222' }).natsUrl).toBe('nats://127.0.0.1:4222');
  });

  it.each([
    ['nats://n1:4222,', /NATS_URL must be a URL or a comma-separated list of URLs \(entry 2 of 2\)/],
    ['nats://n1:4222,,nats://n3:4222', /NATS_URL must be a URL or a comma-separated list of URLs \(entry 2 of 3\)/],
    ['nats://n1:4222,ws://n2:8080', /NATS_URL must use nats: or tls:, got ws: \(entry 2 of 2\)/],
    ['n1:4222', /NATS_URL must use nats: or tls:, got n1:/],
    ['not a url', /NATS_URL must be a URL/],
  ])('refuses %s, naming the variable and the entry', (value, message) => {
    expect(() => loadSystemConfig({ NATS_URL: value })).toThrow(ConfigError);
    expect(() => loadSystemConfig({ NATS_URL: value })).toThrow(message);
  });

  it('never repeats an entry, which may carry a password, in its error', () => {
    const secret = 'nats://app:s3cret@n1:4222,http://app:s3cret@n2:4222';
    expect(() => loadSystemConfig({ NATS_URL: secret })).toThrow(/entry 2 of 2/);
    expect(() => loadSystemConfig({ NATS_URL: secret })).not.toThrow(/s3cret/);
  });

  it('shows each server of a list without its credentials in start-up errors', () => {
    expect(redactUrl('nats://app:s3cret@n1:4222,nats://n2:4222')).toBe('nats://n1:4222,nats://n2:4222');
    // A libpq multi-host URL is not a list of URLs: it stays one (unparsable, so shown as such).
    expect(redactUrl('postgresql://u:pw@h1:5432,h2:5432/db')).not.toMatch(/pw/);
  });
});
