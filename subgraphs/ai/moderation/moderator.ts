import type { Config } from '../../../platform/config/config.js';
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
 */
export function remoteModerator(remote: ContentClassifier): Moderator {
  return {
    name: remote.name,
    async classify({ text, stage, signal }) {
      const reasons = await remote.classify(text, signal);
      if (stage === 'input') return verdictOf(remote.name, reasons);
      return verdictOf(`${remote.name}+${LOCAL_CLASSIFIER}`, [...reasons, ...detectPhi(text)]);
    },
  };
}

/** AI_MODERATION_CLASSIFIER: `local` (default) or `openai` (AI_MODERATION_BASE_URL, key from the vault). */
export function moderatorFromConfig(config: Config, secrets: CachedSecrets): Moderator {
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
  );
}
