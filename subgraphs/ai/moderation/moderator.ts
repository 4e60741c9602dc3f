import type { AiSlice } from '../config.js';
import { servesResidency } from '../routing/routing.logic.js';
import type { CachedSecrets } from '../vault/secrets.js';
import {
  classifyLocally,
  detectPhi,
  LOCAL_CLASSIFIER,
  verdictOf,
  type ModerationStage,
  type ModerationVerdict,
} from './moderation.logic.js';
import { createOpenAiModerationClassifier, type ContentClassifier } from './openai-moderation.js';

export interface ModerationRequest {
  tenantId: string;
  featureKey: string;
  /** input: the rendered prompt, before any provider sees it; output: the provider's answer, before release. */
  stage: ModerationStage;
  text: string;
  /** The request's residency as routing decided it (a mapped tenant's, when the request named none): its text may only go where that residency allows. */
  residency: string | null;
  signal: AbortSignal;
}

/** The moderation port of the assist pipeline. Throws ModerationUnavailableError when it cannot decide. */
export interface Moderator {
  readonly name: string;
  classify(request: ModerationRequest): Promise<ModerationVerdict>;
}

/** The built-in rules only. */
export const localModerator: Moderator = {
  name: LOCAL_CLASSIFIER,
  classify: async ({ text, stage }) => classifyLocally(text, stage),
};

/**
 * A remote content classifier, plus the local PHI rules on outputs: moderation APIs classify
 * harm, not identifiers, and an output leaking an MRN must be caught whichever classifier runs.
 * A request that asks for a residency the endpoint does not serve (AI_MODERATION_RESIDENCIES) is
 * judged by the built-in rules instead: moderation must not carry its text across the boundary the
 * routing keeps ('*' does not cover ON_PREM, as for providers: routing.logic.ts, servesResidency).
 */
export function remoteModerator(remote: ContentClassifier, residencies: readonly string[] = []): Moderator {
  return {
    name: remote.name,
    async classify(request) {
      const { text, stage, signal, residency } = request;
      if (!servesResidency({ residencies }, residency)) return localModerator.classify(request);
      const reasons = await remote.classify(text, signal);
      if (stage === 'input') return verdictOf(remote.name, reasons);
      return verdictOf(`${remote.name}+${LOCAL_CLASSIFIER}`, [...reasons, ...detectPhi(text)]);
    },
  };
}

/** AI_MODERATION_CLASSIFIER: `local` (default) or `openai` (AI_MODERATION_BASE_URL, key from the vault). */
export function moderatorFromConfig(config: AiSlice, secrets: CachedSecrets): Moderator {
  const settings = config.ai.moderation;
  if (settings.classifier === 'local') return localModerator;
  return remoteModerator(
    createOpenAiModerationClassifier({
      baseUrl: settings.baseUrl!,
      allowedHosts: config.providers.allowedHosts,
      model: settings.model,
      timeoutMs: settings.timeoutMs,
      apiKey: () => secrets.field(settings.keyPath, 'api_key'),
    }),
    settings.residencies,
  );
}
