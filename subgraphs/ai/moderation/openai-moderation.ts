import { mapRemoteCategory, type ModerationReason } from './moderation.logic.js';

/** The remote classifier could not give a verdict; a required moderation step then fails closed. */
export class ModerationUnavailableError extends Error {
  constructor(readonly reason: string) {
    super(`moderation classifier unavailable (${reason})`);
    this.name = 'ModerationUnavailableError';
  }
}

export interface ContentClassifier {
  readonly name: string;
  classify(text: string, signal: AbortSignal): Promise<ModerationReason[]>;
}

export interface OpenAiModerationOptions {
  /** e.g. https://api.openai.com (or .../v1): the request goes to {base}/v1/moderations. */
  baseUrl: string;
  allowedHosts: readonly string[];
  model: string;
  timeoutMs: number;
  apiKey: () => Promise<string | undefined>;
  fetch?: typeof fetch;
}

/**
 * An OpenAI-compatible moderation endpoint (`POST {base}/v1/moderations`). The provider's own
 * `flagged` decides; its flagged categories become the reasons (rule `openai:<category>`, with
 * the score). Every failure is a ModerationUnavailableError carrying a code, never a body.
 */
export function createOpenAiModerationClassifier(options: OpenAiModerationOptions): ContentClassifier {
  const base = new URL(options.baseUrl);
  if (!options.allowedHosts.includes(base.host)) {
    throw new Error(`Moderation host ${base.host} is not in PROVIDER_ALLOWED_HOSTS`);
  }
  const prefix = base.pathname.replace(/\/+$/, '');
  const endpoint = new URL(`${prefix.endsWith('/v1') ? prefix : `${prefix}/v1`}/moderations`, base).toString();
  const doFetch = options.fetch ?? fetch;
  return {
    name: `openai-moderation:${options.model}`,
    async classify(text, signal) {
      let key: string | undefined;
      try {
        key = await options.apiKey();
      } catch {
        throw new ModerationUnavailableError('key_unavailable');
      }
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
      if (key) headers.authorization = `Bearer ${key}`;
      let response: Response;
      let raw: string;
      try {
        response = await doFetch(endpoint, {
          method: 'POST',
          headers,
          body: JSON.stringify({ model: options.model, input: text }),
          signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]),
          redirect: 'error',
        });
        raw = await response.text();
      } catch {
        throw new ModerationUnavailableError(signal.aborted ? 'aborted' : 'unreachable_or_timeout');
      }
      if (!response.ok) throw new ModerationUnavailableError(`http_${response.status}`);
      return parseModeration(raw);
    },
  };
}

function parseModeration(raw: string): ModerationReason[] {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw new ModerationUnavailableError('malformed_response');
  }
  const results = (body as { results?: unknown }).results;
  if (!Array.isArray(results) || results.length === 0) throw new ModerationUnavailableError('malformed_response');
  const reasons: ModerationReason[] = [];
  for (const result of results as Array<{ flagged?: unknown; categories?: unknown; category_scores?: unknown }>) {
    if (typeof result?.flagged !== 'boolean' || typeof result.categories !== 'object' || result.categories === null) {
      throw new ModerationUnavailableError('malformed_response');
    }
    if (!result.flagged) continue;
    const scores = (result.category_scores ?? {}) as Record<string, unknown>;
    const flaggedNames = Object.entries(result.categories as Record<string, unknown>)
      .filter(([, on]) => on === true)
      .map(([name]) => name);
    // A flagged result naming no category is still flagged: keep it visible as "unspecified".
    for (const name of flaggedNames.length ? flaggedNames : ['unspecified']) {
      const score = scores[name];
      reasons.push({
        category: mapRemoteCategory(name),
        rule: `openai:${name}`,
        count: 1,
        ...(typeof score === 'number' ? { score: Math.round(score * 1000) / 1000 } : {}),
      });
    }
  }
  return reasons;
}
