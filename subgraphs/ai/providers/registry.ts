import type { PlatformConfig } from '../../../platform/config/config.js';
import { mockProviderServes } from '../../../platform/config/production.logic.js';
import type { AiSlice } from '../config.js';
import type { ProviderProfile } from '../routing/routing.logic.js';
import type { CachedSecrets } from '../vault/secrets.js';
import { createAzureOpenAiProvider } from './azure-openai.js';
import { createBedrockProvider } from './bedrock.js';
import { createMockProvider } from './mock.js';
import { createOpenAiCompatibleProvider } from './openai-compatible.js';
import type { ModelProvider } from './provider.js';

/** Provider names an admin may put in a routing rule, configured here or not (yet). */
export const BUILT_IN_PROVIDERS = ['mock', 'openai-compatible', 'azure-openai', 'bedrock', 'on-prem'] as const;

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
 * The providers of the configuration: `mock` (in production only with AI_ALLOW_MOCK_PROVIDER, so
 * a rule falling back to it passes it over as not configured); `openai-compatible` when OPENAI_BASE_URL is
 * set, its key read (through the cache) from the vault at OPENAI_KEY_PATH, field `api_key`;
 * `azure-openai` (AZURE_OPENAI_ENDPOINT), `bedrock` (BEDROCK_REGION) and `on-prem`
 * (ONPREM_BASE_URL, the OpenAI-compatible adapter with residency ON_PREM) when configured.
 */
export function providersFromConfig(
  config: AiSlice & Pick<PlatformConfig, 'production'>,
  secrets: CachedSecrets,
): ProviderRegistry {
  const list: ModelProvider[] = [];
  if (mockProviderServes({ production: config.production, allowMockProvider: config.providers.allowMock })) {
    list.push(
      createMockProvider({
        residencies: config.ai.residencies.mock,
        timeoutMs: config.ai.timeoutMs.mock,
        faultInjection: config.ai.mockFaultInjection,
      }),
    );
  }
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
  const { azureOpenai, bedrock, onPremBaseUrl } = config.providers;
  if (azureOpenai) {
    list.push(
      createAzureOpenAiProvider({
        endpoint: azureOpenai.endpoint,
        apiVersion: azureOpenai.apiVersion,
        allowedHosts: config.providers.allowedHosts,
        residencies: config.ai.residencies.azure,
        timeoutMs: config.ai.timeoutMs.azure,
        apiKey: () => secrets.field(config.ai.azureKeyPath, 'api_key'),
      }),
    );
  }
  if (bedrock) {
    list.push(
      createBedrockProvider({
        region: bedrock.region,
        endpoint: bedrock.endpoint,
        allowedHosts: config.providers.allowedHosts,
        residencies: config.ai.residencies.bedrock,
        timeoutMs: config.ai.timeoutMs.bedrock,
        credentialRefreshMs: Math.max(1, config.ai.vaultCacheSeconds) * 1000,
        credentials: async () => {
          const secret = await secrets.read(config.ai.bedrockKeyPath);
          if (!secret?.access_key_id || !secret.secret_access_key) return undefined;
          return {
            accessKeyId: secret.access_key_id,
            secretAccessKey: secret.secret_access_key,
            sessionToken: secret.session_token || undefined,
          };
        },
      }),
    );
  }
  if (onPremBaseUrl) {
    const keyPath = config.ai.onPremKeyPath;
    list.push(
      createOpenAiCompatibleProvider({
        name: 'on-prem',
        baseUrl: onPremBaseUrl,
        allowedHosts: config.providers.allowedHosts,
        residencies: config.ai.residencies.onPrem,
        timeoutMs: config.ai.timeoutMs.onPrem,
        // Offline clinics may have no vault in reach: without ONPREM_KEY_PATH no key is read or sent.
        apiKey: keyPath ? () => secrets.field(keyPath, 'api_key') : async () => undefined,
      }),
    );
  }
  return providerRegistry(list);
}
