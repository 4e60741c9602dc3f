import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../platform/config/env.js';
import { loadSystemConfig } from '../../../processes/config.js';

describe('AI governance and rollout configuration', () => {
  it('defaults to the spec: moderation for note_summary, 30-day key retention, parity ratio 1.1, no extra providers', () => {
    const config = loadSystemConfig({});
    expect(config.ai.moderation).toMatchObject({ features: ['patient_chart.note_summary'], classifier: 'local' });
    expect(config.ai.keyRetentionDays).toBe(30);
    expect(config.ai.shadowParity).toEqual({ maxRatio: 1.1, minSamples: 20 });
    expect(config.ai.reviewClaimMinutes).toBe(15);
    expect(config.ai.residencies).toMatchObject({ azure: ['AF'], onPrem: ['ON_PREM'], bedrock: [] });
    expect(config.providers).toMatchObject({ azureOpenai: undefined, bedrock: undefined, onPremBaseUrl: undefined });
    expect(config.events.aiStream).toBe('AI');
  });

  it('reads the quota fallback: a share of the limit for the whole deployment, divided by at least QUOTA_FALLBACK_REPLICAS', () => {
    expect(loadSystemConfig({}).ai).toMatchObject({ quotaFallbackRpmPercent: 25, quotaFallbackReplicas: 1 });
    const config = loadSystemConfig({ QUOTA_FALLBACK_RPM_PERCENT: '0', QUOTA_FALLBACK_REPLICAS: '6' });
    expect(config.ai).toMatchObject({ quotaFallbackRpmPercent: 0, quotaFallbackReplicas: 6 });
    for (const [name, value] of [
      ['QUOTA_FALLBACK_REPLICAS', '0'],
      ['QUOTA_FALLBACK_REPLICAS', 'two'],
      ['QUOTA_FALLBACK_REPLICAS', '1001'],
      ['QUOTA_FALLBACK_RPM_PERCENT', '101'],
    ]) {
      expect(() => loadSystemConfig({ [name]: value }), `${name}=${value}`).toThrow(ConfigError);
      expect(() => loadSystemConfig({ [name]: value }), `${name}=${value}`).toThrow(name);
    }
  });

  it('reads the provider endpoints and the remote moderation classifier', () => {
    const config = loadSystemConfig({
      AZURE_OPENAI_ENDPOINT: 'https://clinic-za.openai.azure.com',
      AZURE_OPENAI_API_VERSION: '2025-01-01-preview',
      BEDROCK_REGION: 'eu-west-1',
      BEDROCK_ENDPOINT: 'https://vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com',
      AI_MODERATION_CLASSIFIER: 'openai',
      AI_MODERATION_BASE_URL: 'https://moderation.internal',
      AI_MODERATION_FEATURES: 'patient_chart.note_summary,portal.triage',
      SHADOW_PARITY_MAX_RATIO: '1.25',
    });
    expect(config.providers.azureOpenai).toEqual({
      endpoint: 'https://clinic-za.openai.azure.com',
      apiVersion: '2025-01-01-preview',
    });
    expect(config.providers.bedrock).toEqual({
      region: 'eu-west-1',
      endpoint: 'https://vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com',
    });
    expect(config.providers.allowedHosts.sort()).toEqual([
      'clinic-za.openai.azure.com',
      'moderation.internal',
      'vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com',
    ]);
    expect(config.ai.moderation.features).toEqual(['patient_chart.note_summary', 'portal.triage']);
    expect(config.ai.shadowParity.maxRatio).toBe(1.25);
  });

  it.each([
    [{ AI_MODERATION_CLASSIFIER: 'openai' }, /AI_MODERATION_BASE_URL must be set/],
    [{ AI_MODERATION_CLASSIFIER: 'magic' }, /AI_MODERATION_CLASSIFIER must be one of local, openai/],
    [{ AI_MODERATION_FEATURES: 'Patient Chart' }, /AI_MODERATION_FEATURES has an invalid feature key/],
    [{ BEDROCK_REGION: 'europe' }, /BEDROCK_REGION is not an AWS region/],
    [{ BEDROCK_ENDPOINT: 'https://x.example' }, /BEDROCK_ENDPOINT needs BEDROCK_REGION/],
    [{ SHADOW_PARITY_MAX_RATIO: 'fast' }, /SHADOW_PARITY_MAX_RATIO must be a number/],
    [{ PROVIDER_KEY_RETENTION_DAYS: '-1' }, /PROVIDER_KEY_RETENTION_DAYS must be an integer|between/],
    [{ AI_STREAM: 'AI.events' }, /AI_STREAM is not a valid JetStream stream name/],
  ])('names the variable of a bad value %j', (env, message) => {
    expect(() => loadSystemConfig(env)).toThrow(ConfigError);
    expect(() => loadSystemConfig(env)).toThrow(message);
  });
});
