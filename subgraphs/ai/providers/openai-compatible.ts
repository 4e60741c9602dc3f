import { request as httpRequest, type Dispatcher } from 'undici';
import { systemClock, type Clock } from '../../../platform/clock.js';
import { kindForStatus, parseRetryAfter, ProviderError, type ModelProvider } from './provider.js';

/**
 * Sent on every provider call. fetch sent its own (`node`); undici's request sends none, and a
 * provider's edge may refuse or flag calls without one. It names the caller in the provider's logs.
 */
export const PROVIDER_USER_AGENT = 'catalog-ai-federation-ai-gateway';

export interface OpenAiCompatibleOptions {
  name?: string;
  /** e.g. https://api.openai.com/v1, http://vllm.internal:8000/v1, http://ollama:11434/v1 */
  baseUrl: string;
  /** Hosts this process may call (config.providers.allowedHosts); the base URL must be one. */
  allowedHosts: readonly string[];
  residencies: readonly string[];
  timeoutMs: number;
  /** Read per call from the (cached) vault; undefined = no Authorization header (on-prem servers). */
  apiKey: () => Promise<string | undefined>;
  clock?: Clock;
}

/**
 * Any OpenAI-style chat completions API: the hosted primary, and the same adapter serves vLLM or
 * Ollama on premises. The endpoint comes from configuration only; routing rules name the provider
 * and a model, never a URL.
 */
export function createOpenAiCompatibleProvider(options: OpenAiCompatibleOptions): ModelProvider {
  const base = requireAllowedHost(options.baseUrl, options.allowedHosts);
  const endpoint = new URL(`${base.pathname.replace(/\/$/, '')}/chat/completions`, base).toString();
  return createChatCompletionsProvider({
    name: options.name ?? 'openai-compatible',
    residencies: options.residencies,
    timeoutMs: options.timeoutMs,
    endpoint: () => endpoint,
    modelInBody: true,
    authHeaders: async (): Promise<Record<string, string>> => {
      const key = await options.apiKey();
      return key ? { authorization: `Bearer ${key}` } : {};
    },
    clock: options.clock,
  });
}

/** The base URL, parsed, when its host is on the allow-list (config.providers.allowedHosts). */
export function requireAllowedHost(baseUrl: string, allowedHosts: readonly string[]): URL {
  const base = new URL(baseUrl);
  if (!allowedHosts.includes(base.host)) {
    throw new Error(`Provider host ${base.host} is not in PROVIDER_ALLOWED_HOSTS`);
  }
  return base;
}

export interface ChatCompletionsOptions {
  name: string;
  residencies: readonly string[];
  timeoutMs: number;
  /** The URL of a call for `model` (Azure puts the deployment in the path). */
  endpoint: (model: string) => string;
  /** Whether the body names the model; Azure takes it from the path instead. */
  modelInBody: boolean;
  /** Auth headers of one call, the key read through the vault cache; a throw means the key is unavailable. */
  authHeaders: () => Promise<Record<string, string>>;
  clock?: Clock;
}

/**
 * The chat completions protocol shared by OpenAI, OpenAI-compatible servers and Azure OpenAI.
 *
 * A call goes out with undici's `request` on the process's global dispatcher (the connection pool
 * the WHATWG `fetch` used before), not with `fetch`: a completion is one small JSON document read
 * whole, and through fetch's Request, Response and stream objects the same exchange costs 2.2-3.5
 * times the CPU (bench/http-client-cost.ts), on every answer of the AI gateway
 * (bench/results/2026-11-28T2241-assist-provider-request.md).
 * Redirects are not followed (undici's `request` never follows them): a 3xx is reported as the
 * provider being unreachable at its configured URL, as `redirect: 'error'` did.
 */
export function createChatCompletionsProvider(options: ChatCompletionsOptions): ModelProvider {
  const clock = options.clock ?? systemClock;
  return {
    name: options.name,
    residencies: options.residencies,
    timeoutMs: options.timeoutMs,
    async complete(request) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json',
        'user-agent': PROVIDER_USER_AGENT,
      };
      try {
        Object.assign(headers, await options.authHeaders());
      } catch {
        // The vault's error may name paths or carry a response; none of it belongs in provenance.
        throw new ProviderError('not_configured', 'provider key unavailable from the vault');
      }
      let response: Dispatcher.ResponseData;
      try {
        response = await httpRequest(options.endpoint(request.model), {
          method: 'POST',
          headers,
          body: JSON.stringify({
            ...(options.modelInBody ? { model: request.model } : {}),
            messages: [{ role: 'user', content: request.prompt }],
            max_tokens: request.maxOutputTokens,
          }),
          signal: request.signal,
        });
      } catch (error) {
        if (request.signal.aborted) throw new ProviderError('timeout', 'provider call timed out');
        throw new ProviderError('connect_error', `provider unreachable (${connectCode(error)})`);
      }
      let raw: string;
      try {
        raw = await response.body.text();
      } catch {
        if (request.signal.aborted) throw new ProviderError('timeout', 'provider call timed out');
        throw new ProviderError('connect_error', 'provider connection dropped');
      }
      const status = response.statusCode;
      if (status >= 300 && status < 400) {
        throw new ProviderError('connect_error', `provider answered a redirect (HTTP ${status}), which is not followed`);
      }
      if (status >= 400) {
        const kind = isContentFilter(status, raw) ? 'content_filter' : kindForStatus(status);
        throw new ProviderError(kind, `provider answered HTTP ${status}`, {
          status,
          retryAfterMs: parseRetryAfter(
            headerOf(response.headers, 'retry-after'),
            headerOf(response.headers, 'retry-after-ms'),
            clock.now().getTime(),
          ),
        });
      }
      return parseCompletion(raw, request.model);
    },
  };
}

function parseCompletion(raw: string, requestedModel: string) {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw new ProviderError('malformed_response', 'provider answered with a body that is not JSON');
  }
  const choice = (body as { choices?: Array<{ message?: { content?: unknown }; finish_reason?: unknown }> })?.choices?.[0];
  if (choice?.finish_reason === 'content_filter') throw new ProviderError('content_filter', 'provider filtered the content');
  const text = choice?.message?.content;
  if (typeof text !== 'string')
    throw new ProviderError('malformed_response', 'provider answer has no choices[0].message.content');
  const usage = (body as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } }).usage;
  const model = (body as { model?: unknown }).model;
  return {
    text,
    model: typeof model === 'string' && model ? model : requestedModel,
    usage:
      typeof usage?.prompt_tokens === 'number' && typeof usage?.completion_tokens === 'number'
        ? { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens }
        : undefined,
  };
}

/** OpenAI and Azure OpenAI report filtered prompts as 400 with code content_filter / content_policy_violation. */
function isContentFilter(status: number, raw: string): boolean {
  if (status !== 400) return false;
  try {
    const code = (JSON.parse(raw) as { error?: { code?: unknown } })?.error?.code;
    return code === 'content_filter' || code === 'content_policy_violation';
  } catch {
    return false;
  }
}

/** One response header's value (undici gives lower-cased names; a repeated header, its first value). */
function headerOf(headers: Dispatcher.ResponseData['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The system's code of a failed connection (ECONNREFUSED, ENOTFOUND...), never its message. */
function connectCode(error: unknown): string {
  const { code, cause } = (error ?? {}) as { code?: unknown; cause?: { code?: unknown } };
  if (typeof code === 'string') return code;
  return typeof cause?.code === 'string' ? cause.code : 'network error';
}
