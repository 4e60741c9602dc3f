import { describe, expect, it } from 'vitest';
import { breakingChanges } from '../../../events/schemas/compat.logic.js';
import type { JsonSchema } from '../../../events/schemas/schema-walk.logic.js';

const base: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'schemas://catalog/thing/happened/v1',
  type: 'object',
  required: ['id', 'format', 'count'],
  properties: {
    id: { type: 'string', pattern: '^x_[0-9]+$' },
    format: { type: 'string', enum: ['v1', 'v2'] },
    count: { type: 'integer', minimum: 0, maximum: 100 },
    note: { type: 'string', maxLength: 200 },
    tags: { type: 'array', minItems: 1, items: { type: 'string' } },
    title: { $ref: '#/$defs/localeMap' },
  },
  $defs: { localeMap: { type: 'object', additionalProperties: { type: 'string' } } },
};

type Editable = JsonSchema & { properties: Record<string, JsonSchema>; required: string[] };

/** `base` with `edit` applied to a deep copy. */
function changed(edit: (s: Editable) => unknown): JsonSchema {
  const copy = structuredClone(base) as Editable;
  edit(copy);
  return copy;
}

const kinds = (next: JsonSchema) => breakingChanges(base, next).map((c) => `${c.kind} ${c.path}`);

describe('schema compatibility within one version', () => {
  it('finds nothing when only annotations change', () => {
    expect(kinds(changed((s) => ((s.properties.id.description = 'the id'), (s.title = 'Thing'))))).toEqual([]);
  });

  it('allows adding an optional field and widening an enum', () => {
    expect(kinds(changed((s) => (s.properties.extra = { type: 'boolean' })))).toEqual([]);
    expect(kinds(changed((s) => (s.properties.format.enum = ['v1', 'v2', 'v3'])))).toEqual([]);
  });

  it('allows loosening a constraint', () => {
    expect(kinds(changed((s) => ((s.properties.count.maximum = 1000), (s.properties.note.maxLength = 500))))).toEqual([]);
  });

  it('rejects an added required field', () => {
    expect(kinds(changed((s) => ((s.properties.extra = { type: 'boolean' }), s.required.push('extra'))))).toEqual([
      'added_required /extra',
    ]);
  });

  it('rejects a removed field', () => {
    expect(kinds(changed((s) => delete s.properties.note))).toEqual(['removed /note']);
  });

  it('reports a rename as such (a removal plus an addition)', () => {
    const renamed = changed((s) => {
      s.properties.comment = s.properties.note;
      delete s.properties.note;
    });
    expect(breakingChanges(base, renamed)).toEqual([
      { kind: 'renamed', path: '/note', message: 'renamed to "comment" (a removal plus an addition)' },
    ]);
  });

  it('rejects a retyped field, also inside a referenced definition', () => {
    expect(kinds(changed((s) => (s.properties.count.type = 'string')))).toEqual(['retyped /count']);
    expect(
      kinds(changed((s) => ((s.$defs as Record<string, JsonSchema>).localeMap.additionalProperties = { type: 'number' }))),
    ).toEqual(['retyped /title/{*}']);
  });

  it('rejects enum narrowing, and an enum where there was none', () => {
    expect(kinds(changed((s) => (s.properties.format.enum = ['v1'])))).toEqual(['enum_narrowed /format']);
    expect(kinds(changed((s) => (s.properties.note.enum = ['a', 'b'])))).toEqual(['enum_narrowed /note']);
  });

  it('rejects optional to required and required to optional', () => {
    expect(kinds(changed((s) => s.required.push('note')))).toEqual(['required_changed /note']);
    expect(kinds(changed((s) => (s.required = ['id', 'format'])))).toEqual(['required_changed /count']);
  });

  const tightenings: Array<[string, (s: Editable) => unknown, string]> = [
    ['minimum up', (s) => (s.properties.count.minimum = 1), 'constraint_tightened /count'],
    ['maximum down', (s) => (s.properties.count.maximum = 99), 'constraint_tightened /count'],
    ['minItems up', (s) => (s.properties.tags.minItems = 2), 'constraint_tightened /tags'],
    ['maxLength down', (s) => (s.properties.note.maxLength = 100), 'constraint_tightened /note'],
    ['maxLength added', (s) => (s.properties.id.maxLength = 30), 'constraint_tightened /id'],
    ['pattern changed', (s) => (s.properties.id.pattern = '^x_[0-9]{2}$'), 'constraint_tightened /id'],
    ['format added', (s) => (s.properties.note.format = 'email'), 'constraint_tightened /note'],
    ['additionalProperties true to false', (s) => (s.additionalProperties = false), 'constraint_tightened /'],
    ['array item constraint', (s) => ((s.properties.tags.items as JsonSchema).minLength = 1), 'constraint_tightened /tags/[]'],
  ];

  it.each(tightenings)('rejects a tightened constraint: %s', (_name, edit, expected) => {
    expect(kinds(changed(edit))).toEqual([expected]);
  });

  it('refuses to judge keywords it does not understand', () => {
    expect(kinds(changed((s) => (s.properties.note.anyOf = [{ maxLength: 3 }])))).toEqual(['unsupported_change /note']);
  });

  it('lists every breaking change of a combined edit', () => {
    const next = changed((s) => {
      delete s.properties.note;
      s.properties.format.enum = ['v2'];
      s.properties.count.minimum = 5;
    });
    expect(kinds(next).sort()).toEqual(['constraint_tightened /count', 'enum_narrowed /format', 'removed /note']);
  });
});
