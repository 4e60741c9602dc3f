import { canonicalHash } from '../../../platform/canonical-json.js';

/**
 * A template version is immutable; its hash covers everything that changes what is sent to a
 * model (feature key, body, declared variables), in canonical form so the same template always
 * hashes the same wherever it is computed.
 */
export function templateHash(template: { featureKey: string; body: string; variables: string[] }): string {
  return `sha256:${canonicalHash({ featureKey: template.featureKey, body: template.body, variables: [...template.variables].sort() })}`;
}

/** Variables a body uses, written as {{name}}. */
export function templateVariables(body: string): string[] {
  return [...new Set([...body.matchAll(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g)].map((m) => m[1]))].sort();
}
