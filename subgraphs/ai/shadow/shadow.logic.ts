import { badInput } from '../../../platform/errors/errors.js';
import { validateFeatureKey } from '../routing/routing.logic.js';

/**
 * Phase 1's gate: "parallel shadow verification for 1 week, gated on P95 latency parity". The
 * gateway's side is the latency of its shadow-mode assist calls (from provenance); the legacy side
 * is what consumers measured on their direct provider calls and reported.
 */

/** Nearest-rank percentile (the smallest value with at least p% of the values at or below it). */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  if (p <= 0) return sorted[0];
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, rank) - 1];
}

export interface ParityInput {
  gateway: readonly number[];
  legacy: readonly number[];
  /** gateway P95 / legacy P95 at or below this holds parity (SHADOW_PARITY_MAX_RATIO). */
  maxRatio: number;
  /** Fewer samples on either side say nothing about a P95 (SHADOW_PARITY_MIN_SAMPLES). */
  minSamples: number;
}

export interface ParityResult {
  gatewayP50: number | null;
  gatewayP95: number | null;
  gatewayP99: number | null;
  legacyP95: number | null;
  ratio: number | null;
  parityHolds: boolean;
  sampleCounts: { gateway: number; legacy: number };
  /** Why parity does not hold, or null when it does. */
  reason: 'insufficient_samples' | 'ratio_exceeded' | null;
}

export function shadowParity(input: ParityInput): ParityResult {
  const gateway = [...input.gateway].sort((a, b) => a - b);
  const legacy = [...input.legacy].sort((a, b) => a - b);
  const gatewayP95 = percentile(gateway, 95);
  const legacyP95 = percentile(legacy, 95);
  // A legacy P95 of 0 ms is a measurement artefact; count it as 1 ms rather than divide by zero.
  const ratio =
    gatewayP95 === null || legacyP95 === null ? null : Math.round((gatewayP95 / Math.max(1, legacyP95)) * 1000) / 1000;
  const enough = gateway.length >= input.minSamples && legacy.length >= input.minSamples;
  const holds = enough && ratio !== null && ratio <= input.maxRatio;
  return {
    gatewayP50: percentile(gateway, 50),
    gatewayP95,
    gatewayP99: percentile(gateway, 99),
    legacyP95,
    ratio,
    parityHolds: holds,
    sampleCounts: { gateway: gateway.length, legacy: legacy.length },
    reason: holds ? null : !enough ? 'insufficient_samples' : 'ratio_exceeded',
  };
}

export const MAX_SAMPLES_PER_CALL = 1_000;
export const MAX_SAMPLE_MS = 600_000;
/** The window a parity question may span (the rollout's shadow week, with room). */
export const MAX_WINDOW_DAYS = 31;

export function validateLatencySamples(
  featureKey: string,
  samples: readonly number[],
): { featureKey: string; samples: number[] } {
  validateFeatureKey(featureKey);
  if (samples.length === 0 || samples.length > MAX_SAMPLES_PER_CALL) {
    throw badInput(`samples holds 1-${MAX_SAMPLES_PER_CALL} latencies`, { argument: 'samples' });
  }
  samples.forEach((value, index) => {
    if (!Number.isInteger(value) || value < 0 || value > MAX_SAMPLE_MS) {
      throw badInput(`samples[${index}] must be a whole number of milliseconds between 0 and ${MAX_SAMPLE_MS}`, {
        argument: `samples[${index}]`,
      });
    }
  });
  return { featureKey, samples: [...samples] };
}

export function validateWindow(from: Date, to: Date): void {
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime()))
    throw badInput('from and to must be dates', { argument: 'from' });
  if (from.getTime() >= to.getTime()) throw badInput('from must be before to', { argument: 'from' });
  if (to.getTime() - from.getTime() > MAX_WINDOW_DAYS * 86_400_000) {
    throw badInput(`The window spans at most ${MAX_WINDOW_DAYS} days`, { argument: 'to' });
  }
}
