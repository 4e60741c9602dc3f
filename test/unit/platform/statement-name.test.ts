import { describe, expect, it } from 'vitest';
import { preparedMark, statementName } from '../../../platform/db/statement-name.logic.js';

describe('named prepared statements: which statements, under which name', () => {
  it('names a marked text after its label and a digest of the text, the same name every time', () => {
    const text = `${preparedMark('assist_record')}INSERT INTO "T" (a) SELECT v.a FROM jsonb_to_recordset($1::jsonb) AS v(a int)`;
    const name = statementName(text);
    expect(name).toMatch(/^assist_record_[0-9a-f]{12}$/);
    expect(statementName(`${text}`)).toBe(name);
  });

  it('gives two texts under one label two names (pg refuses one name for two texts)', () => {
    const a = statementName(`${preparedMark('effect_lookup')}SELECT 1`);
    const b = statementName(`${preparedMark('effect_lookup')}SELECT 2`);
    expect(a).not.toBe(b);
    expect(a?.startsWith('effect_lookup_')).toBe(true);
  });

  it('leaves unmarked statements unnamed, also when the mark is not at the start', () => {
    expect(statementName('SELECT 1')).toBeUndefined();
    expect(statementName(`SELECT 1 ${preparedMark('late')}`)).toBeUndefined();
  });

  it('refuses a label that is not snake_case', () => {
    expect(() => preparedMark('Assist-Record')).toThrow(/snake_case/);
    expect(() => preparedMark('x'.repeat(42))).toThrow(/snake_case/);
  });
});
