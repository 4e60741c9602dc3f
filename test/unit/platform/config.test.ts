import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../platform/config/env.js';
import { systemClock } from '../../../platform/clock.js';
import { providersFromConfig } from '../../../subgraphs/ai/providers/registry.js';
import { cacheSecrets } from '../../../subgraphs/ai/vault/secrets.js';
import {
  loadAiProcessConfig,
  loadCatalogProcessConfig,
  loadGatewayProcessConfig,
  loadSystemConfig,
  loadWorkerProcessConfig,
} from '../../../processes/config.js';

describe('configuration', () => {
  it('runs on embedded defaults with no environment', () => {
    const config = loadSystemConfig({});
    expect(config).toMatchObject({
      port: 4000,
      catalogPort: 4001,
      aiPort: 4002,
      databaseUrl: undefined,
      natsUrl: undefined,
      redisUrl: undefined,
      dbPreparedStatements: true,
    });
    expect(loadSystemConfig({ DB_PREPARED_STATEMENTS: 'false' }).dbPreparedStatements).toBe(false);
    expect(config.ops.subgraphExecution).toBe('compiled');
    expect(loadSystemConfig({ SUBGRAPH_EXECUTION: 'graphql-js' }).ops.subgraphExecution).toBe('graphql-js');
    expect(config.catalogUrls).toEqual(['http://127.0.0.1:4001/graphql']);
    expect(config.events).toMatchObject({
      catalogStream: 'CATALOG',
      dlqStream: 'CATALOG_DLQ',
      maxDeliver: 6,
      ackWaitSeconds: 30,
      relayPollIntervalMs: 100,
      relayListen: true,
    });
    expect(loadWorkerProcessConfig({ OUTBOX_POLL_INTERVAL_MS: '1000' }).events.relayPollIntervalMs).toBe(1000);
    expect(loadWorkerProcessConfig({ OUTBOX_LISTEN: 'false' }).events.relayListen).toBe(false);
    expect(config.auth.maxTokenLifetimeSeconds).toBe(900);
  });

  it.each([
    ['PORT', 'abc', /PORT must be an integer/],
    ['PORT', '70000', /PORT must be between 0 and 65535/],
    ['DATABASE_URL', 'mysql://x', /DATABASE_URL must use postgres: or postgresql:/],
    ['NATS_URL', 'not a url', /NATS_URL must be a URL/],
    ['REDIS_URL', 'http://x', /REDIS_URL must use redis: or rediss:/],
    ['OUTBOX_POLL_INTERVAL_MS', '5', /OUTBOX_POLL_INTERVAL_MS must be between 10 and 60000/],
    ['OUTBOX_LISTEN', 'sometimes', /OUTBOX_LISTEN must be true or false/],
    ['CATALOG_DLQ_STREAM', 'CATALOG.dlq', /CATALOG_DLQ_STREAM is not a valid JetStream stream name/],
    ['MOCK_FAULT_INJECTION', 'maybe', /MOCK_FAULT_INJECTION must be true or false/],
    ['DB_PREPARED_STATEMENTS', 'sometimes', /DB_PREPARED_STATEMENTS must be true or false/],
    ['SUBGRAPH_EXECUTION', 'jit', /SUBGRAPH_EXECUTION must be one of compiled, graphql-js/],
  ])('names %s when its value %s is invalid', (variable, value, message) => {
    expect(() => loadSystemConfig({ [variable]: value })).toThrow(ConfigError);
    expect(() => loadSystemConfig({ [variable]: value })).toThrow(message);
  });

  it('adds the hosted provider to the allow-list of provider hosts', () => {
    const config = loadSystemConfig({
      OPENAI_BASE_URL: 'https://llm.internal.example:8443/v1',
      PROVIDER_ALLOWED_HOSTS: 'vllm.clinic.local',
    });
    expect(config.providers.allowedHosts.sort()).toEqual(['llm.internal.example:8443', 'vllm.clinic.local']);
  });
});

describe('process configurations', () => {
  it('validates the shared slice and the slices of the parts each process runs, not the others', () => {
    expect(() => loadGatewayProcessConfig({ PORT: 'abc' })).toThrow(/PORT must be an integer/);
    expect(() => loadAiProcessConfig({ MOCK_FAULT_INJECTION: 'maybe' })).toThrow(/MOCK_FAULT_INJECTION must be true or false/);
    expect(loadGatewayProcessConfig({ MOCK_FAULT_INJECTION: 'maybe' }).gateway.graphiql).toBe(true);
    expect(() => loadWorkerProcessConfig({ CATALOG_DLQ_STREAM: 'CATALOG.dlq' })).toThrow(/CATALOG_DLQ_STREAM/);
    expect(loadGatewayProcessConfig({ CATALOG_DLQ_STREAM: 'CATALOG.dlq' }).catalogUrls).toEqual([
      'http://127.0.0.1:4001/graphql',
    ]);
  });
});

describe("the gateway's subgraph replicas and timeouts", () => {
  it('takes a comma list of replica URLs per subgraph, and one URL (a balancer) as before', () => {
    const config = loadGatewayProcessConfig({
      CATALOG_URL: 'http://catalog-1:4001/graphql, http://catalog-2:4001/graphql',
      AI_URL: 'https://ai.internal/graphql',
    });
    expect(config.catalogUrls).toEqual(['http://catalog-1:4001/graphql', 'http://catalog-2:4001/graphql']);
    expect(config.aiUrls).toEqual(['https://ai.internal/graphql']);
    expect(config.gateway).toMatchObject({
      subgraphTimeoutMs: 15_000,
      subgraphMutationTimeoutMs: 90_000,
      subgraphReplicaBackoffMs: 1_000,
    });
  });

  it.each([
    ['CATALOG_URL', 'http://catalog-1:4001/graphql,not a url', /CATALOG_URL must be a URL/],
    ['AI_URL', 'http://ai-1/graphql,ftp://ai-2/graphql', /AI_URL must use http: or https:/],
    ['AI_URL', 'http://ai-1/graphql,http://ai-1/graphql', /AI_URL lists http:\/\/ai-1\/graphql twice/],
    ['SUBGRAPH_TIMEOUT_MS', '10', /SUBGRAPH_TIMEOUT_MS must be between 100 and 600000/],
    ['SUBGRAPH_MUTATION_TIMEOUT_MS', 'soon', /SUBGRAPH_MUTATION_TIMEOUT_MS must be an integer/],
    ['SUBGRAPH_REPLICA_BACKOFF_MS', '0', /SUBGRAPH_REPLICA_BACKOFF_MS must be between 50 and 60000/],
  ])('names %s when its value %s is invalid', (variable, value, message) => {
    expect(() => loadGatewayProcessConfig({ [variable]: value })).toThrow(ConfigError);
    expect(() => loadGatewayProcessConfig({ [variable]: value })).toThrow(message);
  });
});

describe('production mode (NODE_ENV=production)', () => {
  const real = {
    NODE_ENV: 'production',
    DATABASE_URL: 'postgresql://app@db:5432/catalog',
    NATS_URL: 'nats://nats:4222',
    REDIS_URL: 'redis://redis:6379',
    AUTH_JWKS_URL: 'https://idp.example.org/jwks.json',
    OPENAI_BASE_URL: 'https://llm.example.org/v1',
  };
  const loaders = {
    gateway: loadGatewayProcessConfig,
    catalog: loadCatalogProcessConfig,
    ai: loadAiProcessConfig,
    worker: loadWorkerProcessConfig,
    system: loadSystemConfig,
  };

  it.each(Object.keys(loaders))('%s: refuses to start without a verification key, naming the variable', (part) => {
    const { AUTH_JWKS_URL: _key, ...withoutKey } = real;
    const load = () => loaders[part as keyof typeof loaders](withoutKey);
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/AUTH_JWKS_URL or AUTH_PUBLIC_KEY must be set when NODE_ENV=production/);
  });

  it.each([
    ['gateway', 'DATABASE_URL', /DATABASE_URL must be set when NODE_ENV=production/],
    ['catalog', 'NATS_URL', /NATS_URL must be set/],
    ['worker', 'NATS_URL', /NATS_URL must be set/],
    ['ai', 'REDIS_URL', /REDIS_URL must be set/],
    ['system', 'REDIS_URL', /REDIS_URL must be set/],
    ['ai', 'OPENAI_BASE_URL', /OPENAI_BASE_URL, .* or ONPREM_BASE_URL must be set when NODE_ENV=production/],
    ['system', 'OPENAI_BASE_URL', /AI_ALLOW_MOCK_PROVIDER=true/],
  ])('%s: refuses to fall back from %s', (part, variable, message) => {
    const env: Record<string, string> = { ...real };
    delete env[variable];
    expect(() => loaders[part as keyof typeof loaders](env)).toThrow(message);
  });

  it.each(['gateway', 'system'] as const)('%s: refuses CORS_ORIGINS=* unless CORS_ALLOW_ANY_ORIGIN, then warns', (part) => {
    expect(() => loaders[part]({ ...real, CORS_ORIGINS: '*' })).toThrow(/CORS_ORIGINS is \* and NODE_ENV=production/);
    const config = loaders[part]({ ...real, CORS_ORIGINS: '*', CORS_ALLOW_ANY_ORIGIN: 'true' });
    expect(config.gateway.corsOrigins).toBe('*');
    expect(config.startWarnings).toEqual([expect.stringContaining('CORS_ALLOW_ANY_ORIGIN=true')]);
  });

  it.each(['ai', 'system'] as const)('%s: serves the mock provider only with AI_ALLOW_MOCK_PROVIDER, then warns', (part) => {
    const { OPENAI_BASE_URL: _provider, ...withoutProvider } = real;
    const config = loaders[part]({ ...withoutProvider, AI_ALLOW_MOCK_PROVIDER: 'true' });
    expect(config.providers.allowMock).toBe(true);
    expect(config.startWarnings).toEqual([expect.stringContaining('AI_ALLOW_MOCK_PROVIDER=true')]);
    expect(loaders[part](real).startWarnings).toEqual([]);
  });

  it('registers the mock provider in production only with AI_ALLOW_MOCK_PROVIDER: a rule falling back to it passes it over', () => {
    const secrets = cacheSecrets({ kind: 'file', read: async () => undefined }, { ttlMs: 1000, clock: systemClock });
    const names = (env: Record<string, string>) => [...providersFromConfig(loadAiProcessConfig(env), secrets).providers.keys()];
    expect(names(real)).toEqual(['openai-compatible']);
    expect(names({ ...real, AI_ALLOW_MOCK_PROVIDER: 'true' })).toEqual(['mock', 'openai-compatible']);
    expect(names({ OPENAI_BASE_URL: real.OPENAI_BASE_URL })).toEqual(['mock', 'openai-compatible']);
  });

  it('starts with every real service, does not migrate at start and drains for 5 s; development does the opposite', () => {
    for (const load of Object.values(loaders)) {
      const config = load(real);
      expect(config).toMatchObject({ production: true, migrateOnStart: false });
      expect(config.ops.shutdownDrainMs).toBe(5_000);
    }
    expect(loadSystemConfig({})).toMatchObject({ production: false, migrateOnStart: true });
    expect(loadSystemConfig({}).ops.shutdownDrainMs).toBe(0);
    expect(loadGatewayProcessConfig({ ...real, MIGRATE_ON_START: 'true' }).migrateOnStart).toBe(true);
  });
});

describe('configuration documentation', () => {
  it('names every variable loadConfig reads in docs/configuration.md', async () => {
    const read = new Set<string>();
    // Every variable read, whether set or not: the proxy answers undefined and records the name.
    const env = new Proxy({} as Record<string, string | undefined>, {
      get: (_target, name) => {
        if (typeof name === 'string') read.add(name);
        return undefined;
      },
    });
    loadSystemConfig(env);
    const readme = await readFile(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
    expect(read.size).toBeGreaterThan(40);
    expect([...read].filter((name) => !readme.includes(`\`${name}\``)).sort()).toEqual([]);
  });
});
