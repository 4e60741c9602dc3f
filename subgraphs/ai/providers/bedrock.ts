import { BedrockRuntimeClient, ConverseCommand, type ConverseCommandOutput } from '@aws-sdk/client-bedrock-runtime';
import { requireAllowedHost } from './openai-compatible.js';
import { kindForStatus, ProviderError, type ModelProvider, type ProviderErrorKind } from './provider.js';

export interface BedrockCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface BedrockOptions {
  name?: string;
  region: string;
  /** BEDROCK_ENDPOINT (a VPC endpoint, or a local fake in tests); default bedrock-runtime.<region>.amazonaws.com. */
  endpoint?: string;
  allowedHosts: readonly string[];
  residencies: readonly string[];
  timeoutMs: number;
  /** Static credentials from the vault; undefined when the secret is missing. */
  credentials: () => Promise<BedrockCredentials | undefined>;
  /** How often the SDK asks for the credentials again, so a rotated key is picked up. */
  credentialRefreshMs?: number;
}

/** The SDK's identity cache treats credentials as expired this long before their expiration (smithy EXPIRATION_MS). */
const SDK_EXPIRY_WINDOW_MS = 300_000;

class CredentialsUnavailable extends Error {}

/** Bedrock exceptions by name: the status alone does not tell a throttle (429) from a model not ready (429). */
const KIND_BY_NAME: Record<string, ProviderErrorKind> = {
  ThrottlingException: 'rate_limited',
  ServiceQuotaExceededException: 'rate_limited',
  ModelNotReadyException: 'server_error',
  ServiceUnavailableException: 'server_error',
  InternalServerException: 'server_error',
  ModelErrorException: 'server_error',
  ModelTimeoutException: 'timeout',
  AccessDeniedException: 'auth_error',
  UnrecognizedClientException: 'auth_error',
  ExpiredTokenException: 'auth_error',
  InvalidSignatureException: 'auth_error',
  ValidationException: 'bad_request',
  ResourceNotFoundException: 'bad_request',
};

/**
 * Amazon Bedrock's Converse API through the official SDK, which signs every request with SigV4
 * (service `bedrock`) from static credentials held in the vault. The SDK's own retries are off:
 * the call engine retries, backs off and falls back for every provider alike.
 */
export function createBedrockProvider(options: BedrockOptions): ModelProvider {
  const host = options.endpoint
    ? requireAllowedHost(options.endpoint, options.allowedHosts).host
    : `bedrock-runtime.${options.region}.amazonaws.com`;
  if (!options.allowedHosts.includes(host)) throw new Error(`Provider host ${host} is not in PROVIDER_ALLOWED_HOSTS`);
  const refreshMs = options.credentialRefreshMs ?? 60_000;
  const client = new BedrockRuntimeClient({
    region: options.region,
    endpoint: options.endpoint,
    maxAttempts: 1,
    // Set explicitly so the SDK does not look for them in the environment or ~/.aws files.
    useFipsEndpoint: false,
    useDualstackEndpoint: false,
    credentials: async () => {
      let found: BedrockCredentials | undefined;
      try {
        found = await options.credentials();
      } catch {
        throw new CredentialsUnavailable('vault unavailable');
      }
      if (!found) throw new CredentialsUnavailable('no credentials');
      // The SDK judges this expiration against the system clock (and signs with it), so it is stated
      // in system time, not in the subgraph's injected clock.
      return { ...found, expiration: new Date(Date.now() + SDK_EXPIRY_WINDOW_MS + refreshMs) };
    },
  });

  return {
    name: options.name ?? 'bedrock',
    residencies: options.residencies,
    timeoutMs: options.timeoutMs,
    async complete(request) {
      let output: ConverseCommandOutput;
      try {
        output = await client.send(
          new ConverseCommand({
            modelId: request.model,
            messages: [{ role: 'user', content: [{ text: request.prompt }] }],
            inferenceConfig: { maxTokens: request.maxOutputTokens },
          }),
          { abortSignal: request.signal },
        );
      } catch (error) {
        throw asProviderError(error, request.signal);
      }
      if (output.stopReason === 'content_filtered' || output.stopReason === 'guardrail_intervened') {
        throw new ProviderError('content_filter', 'provider filtered the content');
      }
      const parts = output.output?.message?.content ?? [];
      const text = parts.map((part) => part.text ?? '').join('');
      if (parts.length === 0 || parts.every((part) => typeof part.text !== 'string')) {
        throw new ProviderError('malformed_response', 'provider answer has no output.message.content[].text');
      }
      const usage = output.usage;
      return {
        text,
        // Converse does not echo a model version: the requested model id is what answered.
        model: request.model,
        usage:
          typeof usage?.inputTokens === 'number' && typeof usage.outputTokens === 'number'
            ? { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }
            : undefined,
      };
    },
  };
}

function asProviderError(error: unknown, signal: AbortSignal): ProviderError {
  if (signal.aborted) return new ProviderError('timeout', 'provider call timed out');
  if (error instanceof CredentialsUnavailable)
    return new ProviderError('not_configured', 'provider credentials unavailable from the vault');
  const e = error as { name?: unknown; $metadata?: { httpStatusCode?: unknown }; code?: unknown };
  const status = typeof e.$metadata?.httpStatusCode === 'number' ? e.$metadata.httpStatusCode : undefined;
  const name = typeof e.name === 'string' ? e.name : '';
  if (status === undefined && !KIND_BY_NAME[name]) {
    // No HTTP answer at all: refused, reset or DNS. The SDK's message may carry the endpoint; keep only a code.
    return new ProviderError('connect_error', `provider unreachable (${typeof e.code === 'string' ? e.code : 'network error'})`);
  }
  const kind = KIND_BY_NAME[name] ?? kindForStatus(status ?? 500);
  return new ProviderError(kind, `provider answered ${name || 'an error'}${status ? ` (HTTP ${status})` : ''}`, { status });
}
