import { canonicalHash, sha256Hex } from '../../../platform/text/canonical-json.js';
import { badInput } from '../../../platform/errors/errors.js';

const VARIABLE_RE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
/** Variables starting with `__` are directives to the gateway (e.g. `__mock`), never prompt text. */
export const RESERVED_VARIABLE_PREFIX = '__';

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
  return [...new Set([...body.matchAll(VARIABLE_RE)].map((m) => m[1]))].sort();
}

export function validateTemplateBody(body: string, maxChars: number): void {
  if (body.trim().length === 0) throw badInput('A template body may not be empty', { argument: 'body' });
  if (body.length > maxChars) throw badInput(`A template body may have at most ${maxChars} characters`, { argument: 'body' });
  // Braces that are not a well-formed {{name}} are almost always a typo that would reach the model.
  const stripped = body.replace(VARIABLE_RE, '');
  if (stripped.includes('{{') || stripped.includes('}}')) {
    throw badInput('The template has a malformed {{variable}}', { argument: 'body' });
  }
  const reserved = templateVariables(body).filter((name) => name.startsWith(RESERVED_VARIABLE_PREFIX));
  if (reserved.length)
    throw badInput(`Template variables may not start with ${RESERVED_VARIABLE_PREFIX}`, { variables: reserved });
}

function renderValue(name: string, value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'object' && value !== null) return JSON.stringify(value);
  throw badInput(`Template variable "${name}" is missing`, { variable: name, missing: [name] });
}

/**
 * Strict rendering: every {{name}} of the body must have a value (null counts as missing), extra
 * variables are ignored, and values are substituted in one pass so a value that itself contains
 * `{{x}}` is never expanded again.
 */
export function renderTemplate(body: string, variables: Record<string, unknown>, maxChars: number): string {
  const missing = templateVariables(body).filter((name) => variables[name] === undefined || variables[name] === null);
  if (missing.length) {
    throw badInput(`Template variable${missing.length > 1 ? 's' : ''} ${missing.map((n) => `"${n}"`).join(', ')} missing`, {
      variable: missing[0],
      missing,
    });
  }
  const rendered = body.replace(VARIABLE_RE, (_match, name: string) => renderValue(name, variables[name]));
  if (rendered.length > maxChars) {
    throw badInput(`The rendered prompt has ${rendered.length} characters; the limit is ${maxChars}`, { limit: maxChars });
  }
  return rendered;
}

/** The hash of exactly what was sent to the model, recorded instead of the text. */
export function promptHash(rendered: string): string {
  return `sha256:${sha256Hex(rendered)}`;
}
