import { badInput } from '../../../platform/errors/errors.js';
import { isId } from '../../../platform/ids.js';
import { isNodePath, validateLocaleMap, type LocaleMap } from '../course/course-metadata.logic.js';

export interface TaxonomyNodeData {
  path: string;
  label: LocaleMap;
}

export interface TaxonomyDiff {
  added: TaxonomyNodeData[];
  removed: string[];
  moved: Array<{ from: string; to: string }>;
  renamed: TaxonomyNodeData[];
}

const NAMESPACE = /^[a-z][a-z0-9_.-]{0,63}$/;
const MAX_NODES = 10_000;

export function requireNamespace(value: string): string {
  if (!NAMESPACE.test(value)) {
    throw badInput('namespace must be 1 to 64 characters: lowercase letters, digits, "_", "." or "-", starting with a letter', {
      field: 'namespace',
    });
  }
  return value;
}

export function requireTaxonomyId(value: string, argument = 'taxonomyId'): string {
  if (!isId('taxonomy', value)) throw badInput(`${argument} is not a taxonomy id (tax_...)`, { argument });
  return value;
}

const parentOf = (path: string): string | undefined => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : undefined);
const inSubtree = (path: string, root: string): boolean => path === root || path.startsWith(`${root}/`);

function requirePath(value: unknown, field: string): string {
  if (!isNodePath(value))
    throw badInput(`${field} is not a node path (segments of letters, digits, "_", "." or "-" separated by /)`, { field });
  return value;
}

function requireLabel(value: unknown, field: string): LocaleMap {
  return validateLocaleMap(value, field, { maxText: 200, requireEntry: true });
}

function noRepeats(values: string[], field: string): void {
  const seen = new Set<string>();
  values.forEach((value, index) => {
    if (seen.has(value)) throw badInput(`${field} lists ${value} twice`, { field: `${field}[${index}]` });
    seen.add(value);
  });
}

/**
 * Applies a taxonomy diff to the current nodes and returns the new tree, sorted by path.
 * Semantics (ours; the spec names the four lists only), applied in this order:
 *
 * 1. removed: each path must exist; the node goes with its whole subtree;
 * 2. moved {from, to}: `from` must exist and `to` must not; the subtree moves with it; in order;
 * 3. renamed {path, label}: `path` (after the moves) must exist; only its label changes;
 * 4. added {path, label}: `path` must not exist.
 *
 * Afterwards every node's parent must exist, and no path appears twice. Any failure names the
 * offending entry as BAD_USER_INPUT; an empty diff is refused, since it would publish a version
 * that changes nothing.
 */
export function applyTaxonomyDiff(current: TaxonomyNodeData[], diff: TaxonomyDiff): TaxonomyNodeData[] {
  if (!diff.added.length && !diff.removed.length && !diff.moved.length && !diff.renamed.length) {
    throw badInput('The diff changes nothing: give at least one of added, removed, moved, renamed', { field: 'diff' });
  }
  const tree = new Map(current.map((node) => [node.path, node.label]));

  diff.removed.forEach((path, index) => requirePath(path, `diff.removed[${index}]`));
  noRepeats(diff.removed, 'diff.removed');
  diff.removed.forEach((path, index) => {
    if (!tree.has(path)) throw badInput(`diff.removed[${index}]: ${path} does not exist`, { field: `diff.removed[${index}]` });
    for (const existing of [...tree.keys()]) if (inSubtree(existing, path)) tree.delete(existing);
  });

  diff.moved.forEach(({ from, to }, index) => {
    const field = `diff.moved[${index}]`;
    requirePath(from, `${field}.from`);
    requirePath(to, `${field}.to`);
    if (!tree.has(from)) throw badInput(`${field}: ${from} does not exist`, { field: `${field}.from` });
    if (tree.has(to)) throw badInput(`${field}: ${to} already exists`, { field: `${field}.to` });
    if (inSubtree(to, from)) throw badInput(`${field}: ${from} cannot move into its own subtree`, { field: `${field}.to` });
    for (const [path, label] of [...tree.entries()]) {
      if (!inSubtree(path, from)) continue;
      tree.delete(path);
      tree.set(to + path.slice(from.length), label);
    }
  });

  noRepeats(
    diff.renamed.map((node) => node.path),
    'diff.renamed',
  );
  diff.renamed.forEach((node, index) => {
    const field = `diff.renamed[${index}]`;
    requirePath(node.path, `${field}.path`);
    const label = requireLabel(node.label, `${field}.label`);
    if (!tree.has(node.path)) throw badInput(`${field}: ${node.path} does not exist`, { field: `${field}.path` });
    tree.set(node.path, label);
  });

  diff.added.forEach((node, index) => {
    const field = `diff.added[${index}]`;
    requirePath(node.path, `${field}.path`);
    const label = requireLabel(node.label, `${field}.label`);
    if (tree.has(node.path)) throw badInput(`${field}: ${node.path} already exists`, { field: `${field}.path` });
    tree.set(node.path, label);
  });

  if (tree.size > MAX_NODES) throw badInput(`A taxonomy may hold at most ${MAX_NODES} nodes`, { field: 'diff.added' });
  for (const path of tree.keys()) {
    const parent = parentOf(path);
    if (parent !== undefined && !tree.has(parent)) {
      throw badInput(`${path} would have no parent: ${parent} does not exist after the diff`, { field: 'diff', path });
    }
  }
  return [...tree.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([path, label]) => ({ path, label }));
}

/**
 * A taxonomy's entity tag, for If-Match on publishTaxonomy: its version, which every publish
 * raises by one, so the tag changes with every change of the tree.
 */
export function taxonomyEtag(version: number): string {
  return `"${version}"`;
}
