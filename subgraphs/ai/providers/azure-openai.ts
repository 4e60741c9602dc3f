import { createChatCompletionsProvider, requireAllowedHost, type OpenAiCompatibleOptions } from './openai-compatible.js';
import type { ModelProvider } from './provider.js';

/** As the OpenAI-compatible adapter, with a resource endpoint and API version instead of a base URL. */
export interface AzureOpenAiOptions extends Omit<OpenAiCompatibleOptions, 'baseUrl'> {
  /** The resource endpoint of one region, e.g. https://clinic-za.openai.azure.com (AZURE_OPENAI_ENDPOINT). */
  endpoint: string;
  /** AZURE_OPENAI_API_VERSION, e.g. 2024-10-21. */
  apiVersion: string;
}

/**
 * Azure OpenAI (phase 3, "a cloud-hosted provider with regional residency routing"): the routing
 * rule's model is the deployment name, which Azure takes from the path; the key goes in `api-key`.
 * A resource lives in one region, so its residency is configuration, not a request choice.
 */
export function createAzureOpenAiProvider(options: AzureOpenAiOptions): ModelProvider {
  const base = requireAllowedHost(options.endpoint, options.allowedHosts);
  const root = base.toString().replace(/\/+$/, '');
  const apiVersion = encodeURIComponent(options.apiVersion);
  return createChatCompletionsProvider({
    name: options.name ?? 'azure-openai',
    residencies: options.residencies,
    timeoutMs: options.timeoutMs,
    endpoint: (deployment) =>
      `${root}/openai/deployments/${encodeURIComponent(deployment)}/chat/completions?api-version=${apiVersion}`,
    modelInBody: false,
    authHeaders: async () => {
      const key = await options.apiKey();
      // Azure has no keyless mode here: a missing key is a configuration fault, reported as such.
      if (!key) throw new Error('no key');
      return { 'api-key': key };
    },
    clock: options.clock,
  });
}
