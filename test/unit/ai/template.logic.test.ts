import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors/errors.js';
import {
  promptHash,
  renderTemplate,
  templateHash,
  templateVariables,
  validateTemplateBody,
} from '../../../subgraphs/ai/templates/template.logic.js';
import { BASELINE_TEMPLATES } from '../../../subgraphs/ai/baseline.js';
import { caught } from './catching.js';

const body = 'Summarise in {{locale}}:\n{{note}}';
const base = { featureKey: 'patient_chart.note_summary', body, variables: templateVariables(body) };

describe('template hash', () => {
  it('is the same for the same template, wherever and however often it is computed', () => {
    expect(templateHash(base)).toBe(templateHash({ ...base, variables: [...base.variables].reverse() }));
    expect(templateHash(base)).toMatch(/^sha256:[0-9a-f]{64}$/);
    // Pinned (sha256 of the RFC 8785 form, checked with sha256sum): a change of the canonical form
    // would silently change every stored hash.
    expect(templateHash({ featureKey: 'f.k', body: 'x {{a}}', variables: ['a'] })).toBe(
      'sha256:b26bac6201cf61274dd763900b24740742b35765e7984ed408b15aa787301f21',
    );
  });

  it('changes with any change to the body, the feature key or the variables', () => {
    const original = templateHash(base);
    expect(templateHash({ ...base, body: `${body} ` })).not.toBe(original);
    expect(templateHash({ ...base, body: body.replace('Summarise', 'summarise') })).not.toBe(original);
    expect(templateHash({ ...base, featureKey: 'portal.triage' })).not.toBe(original);
    expect(templateHash({ ...base, variables: [...base.variables, 'extra'] })).not.toBe(original);
  });

  it('gives every baseline template a distinct hash', () => {
    const hashes = BASELINE_TEMPLATES.map((t) => templateHash({ ...t, variables: templateVariables(t.body) }));
    expect(new Set(hashes).size).toBe(BASELINE_TEMPLATES.length);
  });
});

describe('strict rendering', () => {
  it('substitutes every variable and ignores unknown ones', () => {
    expect(renderTemplate(body, { locale: 'fr', note: 'BP 120/80', unused: 'x' }, 10_000)).toBe('Summarise in fr:\nBP 120/80');
  });

  it('names a missing variable (null counts as missing)', () => {
    const error = caught(AppError, () => renderTemplate(body, { locale: 'en', note: null }, 10_000));
    expect(error.code).toBe('BAD_USER_INPUT');
    expect(error.details).toMatchObject({ variable: 'note', missing: ['note'] });
  });

  it('never expands placeholders that arrive inside values', () => {
    expect(renderTemplate(body, { locale: 'en', note: '{{locale}} {{note}}' }, 10_000)).toBe(
      'Summarise in en:\n{{locale}} {{note}}',
    );
  });

  it('renders numbers, booleans and structured values', () => {
    expect(renderTemplate('{{a}} {{b}} {{c}}', { a: 3, b: false, c: ['x', 1] }, 1000)).toBe('3 false ["x",1]');
  });

  it('refuses a rendered prompt above the limit', () => {
    expect(caught(AppError, () => renderTemplate('{{a}}', { a: 'x'.repeat(200) }, 100)).code).toBe('BAD_USER_INPUT');
  });

  it('hashes the rendered prompt, not storing it', () => {
    expect(promptHash('a')).toBe(promptHash('a'));
    expect(promptHash('a')).not.toBe(promptHash('b'));
  });
});

describe('template bodies', () => {
  it('refuses malformed placeholders, reserved names and empty bodies', () => {
    expect(caught(AppError, () => validateTemplateBody('Hello {{ name', 1000)).code).toBe('BAD_USER_INPUT');
    expect(caught(AppError, () => validateTemplateBody('{{__mock}}', 1000)).code).toBe('BAD_USER_INPUT');
    expect(caught(AppError, () => validateTemplateBody('   ', 1000)).code).toBe('BAD_USER_INPUT');
    expect(() => validateTemplateBody('Hello {{name}}', 1000)).not.toThrow();
  });
});
