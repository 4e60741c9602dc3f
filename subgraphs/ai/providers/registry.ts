import type { Config } from '../../../platform/config/config.js';
import type { ProviderProfile } from '../routing/routing.logic.js';
import type { CachedSecrets } from '../vault/secrets.js';
import { createMockProvider } from './mock.js';
import { createOpenAiCompatibleProvider } from './openai-compatible.js';
import type { ModelProvider } from './provider.js';

/** Provider names an admin may put in a routing rule, configured here or not (yet). */
export const BUILT_IN_PROVIDERS = ['mock', 'openai-compatible'] as const;

export interface ProviderRegistry {
  /** Configured providers by name. */
  providers: ReadonlyMap<string, ModelProvider>;
  /** Residency profile of every configured provider, for routing. */
  profiles: ReadonlyMap<string, ProviderProfile>;
  /** Names a rule may use: built-ins and every configured provider. */
  known: ReadonlySet<string>;
}

export function providerRegistry(list: ModelProvider[]): ProviderRegistry {
  const providers = new Map(list.map((p) => [p.name, p]));
  return {
    providers,
    profiles: new Map(list.map((p) => [p.name, { name: p.name, residencies: p.residencies }])),
    known: new Set([...BUILT_IN_PROVIDERS, ...providers.keys()]),
  };
}

/**
 * The providers of the configuration: always `mock`; `openai-compatible` when OPENAI_BASE_URL is
 * set, its key read (through the cache) from the vault at OPENAI_KEY_PATH, field `api_key`.
 */
export function providersFromConfig(config: Config, secrets: CachedSecrets): ProviderRegistry {
  const list: ModelProvider[] = [
    createMockProvider({
      residencies: config.ai.residencies.mock,
      timeoutMs: config.ai.timeoutMs.mock,
      faultInjection: config.ai.mockFaultInjection,
    }),
  ];
  if (config.providers.openaiBaseUrl) {
    list.push(
      createOpenAiCompatibleProvider({
        baseUrl: config.providers.openaiBaseUrl,
        allowedHosts: config.providers.allowedHosts,
        residencies: config.ai.residencies.openai,
        timeoutMs: config.ai.timeoutMs.openai,
        apiKey: () => secrets.field(config.ai.openaiKeyPath, 'api_key'),
      }),
    );
  }
  return providerRegistry(list);
}
