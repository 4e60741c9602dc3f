import { describe, expect, it } from 'vitest';
import { compiledFill, type FieldWriter } from '../../../gateway/result-shaping/compiled-fill.js';

// The compiled fill's own contract; that shaping with it answers exactly what Apollo Gateway's
// does is test/unit/gateway/result-shaping.test.ts's.
interface State {
  invalid: boolean;
  written: string[];
}

/** A writer that records what it was given and marks the object invalid on `'bad'`. */
const recording: FieldWriter<State, string> = (shaping, _output, value, path, parentType) => {
  shaping.written.push(`${path.join('.')}=${JSON.stringify(value)}@${parentType}`);
  shaping.invalid = value === 'bad';
  return value;
};

describe('compiledFill', () => {
  it('copies each field in order through its writer: own values, null for missing or inherited ones', () => {
    const fill = compiledFill<State, string>([
      { responseName: 'title', neverInherited: true },
      { responseName: 'constructor', neverInherited: false },
      { responseName: 'missing', neverInherited: true },
    ]);
    const state: State = { invalid: false, written: [] };
    const output: Record<string, unknown> = {};
    const path = ['courses', 0];
    const result = fill(state, { title: 'T', extra: 1 }, output, path, 'Course', true, [recording, recording, recording]);
    expect(result).toBe(0);
    expect(Object.entries(output)).toEqual([
      ['title', 'T'],
      ['constructor', null],
      ['missing', null],
    ]);
    expect(state.written).toEqual([
      'courses.0.title="T"@Course',
      'courses.0.constructor=null@Course',
      'courses.0.missing=null@Course',
    ]);
    expect(path).toEqual(['courses', 0]);
  });

  it('asks whether a value is the input own where the input is not a plain object', () => {
    const fill = compiledFill<State, string>([{ responseName: 'map', neverInherited: true }]);
    const output: Record<string, unknown> = {};
    fill({ invalid: false, written: [] }, ['x'] as unknown as Record<string, unknown>, output, [], 'Course', false, [recording]);
    expect(output).toEqual({ map: null });
  });

  it('stops at the first value that makes the object invalid, answering 1', () => {
    const fill = compiledFill<State, string>([
      { responseName: 'a', neverInherited: true },
      { responseName: 'b', neverInherited: true },
    ]);
    const state: State = { invalid: false, written: [] };
    const output: Record<string, unknown> = {};
    expect(fill(state, { a: 'bad', b: 'never read' }, output, [], 'Course', true, [recording, recording])).toBe(1);
    expect(output).toEqual({ a: 'bad' });
    expect(state.written).toHaveLength(1);
  });

  it('compiles a list of fields once and keeps it for every request with the same fields', () => {
    const fields = [
      { responseName: 'id', neverInherited: true },
      { responseName: 'label', neverInherited: true },
    ];
    const first = compiledFill(fields);
    expect(compiledFill(fields.map((field) => ({ ...field })))).toBe(first);
    expect(compiledFill([fields[1]!, fields[0]!])).not.toBe(first);
    expect(compiledFill([{ ...fields[0]!, neverInherited: false }, fields[1]!])).not.toBe(first);
  });

  it('refuses a response name that is not a GraphQL name instead of writing it into code', () => {
    expect(() => compiledFill([{ responseName: 'a"]; process.exit(1); //', neverInherited: true }])).toThrow(
      /Not a GraphQL name/,
    );
  });
});
