import { describe, expect, it } from 'vitest';
import { applyTaxonomyDiff, requireNamespace, type TaxonomyDiff } from '../../../subgraphs/catalog/taxonomy/taxonomy.logic.js';
import { errorOf } from './support.js';

const label = (text: string) => ({ en: text });
const tree = [
  { path: 'clinical', label: label('Clinical') },
  { path: 'clinical/cardio', label: label('Cardiology') },
  { path: 'clinical/cardio/ecg', label: label('ECG') },
  { path: 'admin', label: label('Admin') },
];
const empty: TaxonomyDiff = { added: [], removed: [], moved: [], renamed: [] };

describe('taxonomy diff', () => {
  it('adds, removes, moves (with subtree) and renames, returning nodes sorted by path', () => {
    const next = applyTaxonomyDiff(tree, {
      added: [{ path: 'clinical/neuro', label: label('Neurology') }],
      removed: ['admin'],
      moved: [{ from: 'clinical/cardio', to: 'clinical/heart' }],
      renamed: [{ path: 'clinical/heart', label: label('Heart') }],
    });
    expect(next).toEqual([
      { path: 'clinical', label: label('Clinical') },
      { path: 'clinical/heart', label: label('Heart') },
      { path: 'clinical/heart/ecg', label: label('ECG') },
      { path: 'clinical/neuro', label: label('Neurology') },
    ]);
  });

  it('removes a node with its subtree', () => {
    expect(applyTaxonomyDiff(tree, { ...empty, removed: ['clinical'] }).map((n) => n.path)).toEqual(['admin']);
  });

  it('builds a first version from an empty tree', () => {
    const next = applyTaxonomyDiff([], {
      ...empty,
      added: [
        { path: 'b', label: label('B') },
        { path: 'a', label: label('A') },
        { path: 'a/x', label: label('X') },
      ],
    });
    expect(next.map((n) => n.path)).toEqual(['a', 'a/x', 'b']);
  });

  it.each([
    [empty, 'diff'],
    [{ ...empty, removed: ['nope'] }, 'diff.removed[0]'],
    [{ ...empty, removed: ['admin', 'admin'] }, 'diff.removed[1]'],
    [{ ...empty, moved: [{ from: 'nope', to: 'x' }] }, 'diff.moved[0].from'],
    [{ ...empty, moved: [{ from: 'admin', to: 'clinical' }] }, 'diff.moved[0].to'],
    [{ ...empty, moved: [{ from: 'clinical', to: 'clinical/sub' }] }, 'diff.moved[0].to'],
    [{ ...empty, moved: [{ from: 'admin', to: 'ghost/admin' }] }, 'diff'],
    [{ ...empty, renamed: [{ path: 'nope', label: label('N') }] }, 'diff.renamed[0].path'],
    [{ ...empty, renamed: [{ path: 'admin', label: {} }] }, 'diff.renamed[0].label'],
    [{ ...empty, added: [{ path: 'admin', label: label('A') }] }, 'diff.added[0].path'],
    [
      {
        ...empty,
        added: [
          { path: 'x', label: label('X') },
          { path: 'x', label: label('X') },
        ],
      },
      'diff.added[1].path',
    ],
    [{ ...empty, added: [{ path: 'orphan/child', label: label('C') }] }, 'diff'],
    [{ ...empty, added: [{ path: '/bad//path', label: label('C') }] }, 'diff.added[0].path'],
    [{ ...empty, removed: ['admin'], renamed: [{ path: 'admin', label: label('A') }] }, 'diff.renamed[0].path'],
  ])('refuses %j as BAD_USER_INPUT naming %s', (diff, field) => {
    const error = errorOf(() => applyTaxonomyDiff(tree, diff as TaxonomyDiff));
    expect(error?.code).toBe('BAD_USER_INPUT');
    expect(error?.details?.field).toBe(field);
  });

  it('checks namespaces', () => {
    expect(requireNamespace('clinical.specialties')).toBe('clinical.specialties');
    expect(errorOf(() => requireNamespace('Clinical Specialties'))?.code).toBe('BAD_USER_INPUT');
  });
});
