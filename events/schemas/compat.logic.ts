import { canonicalJson } from '../../platform/text/canonical-json.js';
import { isSchemaObject, type JsonSchema } from './schema-walk.logic.js';

/**
 * Compatibility of two schemas published under the same event version (spec, Versioning).
 * Breaking is anything that lets a producer on the new schema emit what an old consumer does not
 * expect, or that makes already-published events (archive, replay) invalid under the new schema.
 * Adding an optional field and widening an enum are the two allowed changes.
 */
export type BreakingKind =
  | 'added_required'
  | 'removed'
  | 'renamed'
  | 'retyped'
  | 'enum_narrowed'
  | 'required_changed'
  | 'constraint_tightened'
  | 'unsupported_change'
  | 'version_removed';

export interface BreakingChange {
  kind: BreakingKind;
  /** Instance path of the member, `[]` standing for array items, e.g. `/moduleSummaries/[]/title`. */
  path: string;
  message: string;
}

const LOWER_BOUNDS = ['minimum', 'exclusiveMinimum', 'minItems', 'minLength', 'minProperties', 'minContains'] as const;
const UPPER_BOUNDS = ['maximum', 'exclusiveMaximum', 'maxItems', 'maxLength', 'maxProperties', 'maxContains'] as const;
const CHANGED_IS_TIGHTER = ['pattern', 'format', 'multipleOf', 'propertyNames', 'contains'] as const;
/** Keywords that do not constrain instances, or that the walk handles itself. */
const HANDLED = new Set<string>([
  '$schema',
  '$id',
  '$comment',
  '$defs',
  '$ref',
  'title',
  'description',
  'examples',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'prefixItems',
  'uniqueItems',
  ...LOWER_BOUNDS,
  ...UPPER_BOUNDS,
  ...CHANGED_IS_TIGHTER,
]);

export interface CompatOptions {
  /**
   * The schema is our reader's copy of another service's event (we never produce it): a field
   * going from required to optional only makes us accept more of what that producer sends, which
   * breaks nobody. Everything that makes the copy reject what it accepted stays breaking (events
   * already on the stream, and dead letters waiting for replay, must stay readable).
   */
  readerCopy?: boolean;
}

export function breakingChanges(oldSchema: JsonSchema, newSchema: JsonSchema, options: CompatOptions = {}): BreakingChange[] {
  const out: BreakingChange[] = [];
  compare(deref(oldSchema, oldSchema), deref(newSchema, newSchema), '', {
    oldRoot: oldSchema,
    newRoot: newSchema,
    out,
    depth: 0,
    readerCopy: options.readerCopy === true,
  });
  return out;
}

interface Ctx {
  oldRoot: JsonSchema;
  newRoot: JsonSchema;
  out: BreakingChange[];
  depth: number;
  readerCopy: boolean;
}

const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);

/** Local `$ref`s are inlined, so a change in `$defs` is reported where the definition is used. */
function deref(node: unknown, root: JsonSchema, depth = 0): unknown {
  if (!isSchemaObject(node) || typeof node.$ref !== 'string') return node;
  const match = /^#\/\$defs\/([^/]+)$/.exec(node.$ref);
  const defs = root.$defs;
  if (!match || !isSchemaObject(defs) || depth > 32) return node;
  const { $ref: _ref, ...siblings } = node;
  return deref({ ...(defs[match[1]] as JsonSchema), ...siblings }, root, depth + 1);
}

function typesOf(node: JsonSchema): string[] | undefined {
  if (node.type === undefined) return undefined;
  return (Array.isArray(node.type) ? node.type.map(String) : [String(node.type)]).sort();
}

function enumOf(node: JsonSchema): unknown[] | undefined {
  if (Array.isArray(node.enum)) return node.enum;
  if ('const' in node) return [node.const];
  return undefined;
}

function compare(oldNode: unknown, newNode: unknown, path: string, ctx: Ctx): void {
  const at = path || '/';
  const report = (kind: BreakingKind, message: string, where = at) => ctx.out.push({ kind, path: where, message });
  if (ctx.depth > 64) return;
  if (!isSchemaObject(oldNode) || !isSchemaObject(newNode)) {
    if (!same(oldNode, newNode)) {
      if (newNode === false || (oldNode === true && isSchemaObject(newNode)))
        report('constraint_tightened', 'schema now rejects values it accepted');
      else if (!(newNode === true)) report('retyped', 'schema replaced');
    }
    return;
  }
  const nested = (o: unknown, n: unknown, p: string) =>
    compare(deref(o, ctx.oldRoot), deref(n, ctx.newRoot), p, { ...ctx, depth: ctx.depth + 1 });

  const oldTypes = typesOf(oldNode);
  const newTypes = typesOf(newNode);
  if (newTypes && !oldTypes) report('constraint_tightened', `type ${newTypes.join('|')} added`);
  else if (oldTypes && newTypes && !same(oldTypes, newTypes))
    report('retyped', `type changed from ${oldTypes.join('|')} to ${newTypes.join('|')}`);

  const oldEnum = enumOf(oldNode);
  const newEnum = enumOf(newNode);
  if (newEnum) {
    const dropped = oldEnum ? oldEnum.filter((v) => !newEnum.some((n) => same(n, v))) : undefined;
    if (!oldEnum) report('enum_narrowed', `restricted to ${JSON.stringify(newEnum)}`);
    else if (dropped!.length) report('enum_narrowed', `values removed: ${JSON.stringify(dropped)}`);
  }

  compareProperties(oldNode, newNode, path, ctx, nested);

  for (const key of LOWER_BOUNDS) {
    const [o, n] = [oldNode[key], newNode[key]];
    if (typeof n === 'number' && (typeof o !== 'number' || n > o))
      report('constraint_tightened', `${key} raised from ${o ?? 'none'} to ${n}`);
  }
  for (const key of UPPER_BOUNDS) {
    const [o, n] = [oldNode[key], newNode[key]];
    if (typeof n === 'number' && (typeof o !== 'number' || n < o))
      report('constraint_tightened', `${key} lowered from ${o ?? 'none'} to ${n}`);
  }
  for (const key of CHANGED_IS_TIGHTER) {
    if (newNode[key] !== undefined && !same(oldNode[key], newNode[key])) {
      report(
        'constraint_tightened',
        `${key} changed from ${JSON.stringify(oldNode[key] ?? null)} to ${JSON.stringify(newNode[key])}`,
      );
    }
  }
  if (newNode.uniqueItems === true && oldNode.uniqueItems !== true) report('constraint_tightened', 'uniqueItems required');

  const oldAdditional = oldNode.additionalProperties ?? true;
  const newAdditional = newNode.additionalProperties ?? true;
  if (oldAdditional === true && newAdditional !== true) {
    report(
      'constraint_tightened',
      newAdditional === false ? 'additionalProperties changed from true to false' : 'additionalProperties now constrained',
    );
  } else if (isSchemaObject(oldAdditional) && newAdditional !== true) {
    nested(oldAdditional, newAdditional, `${path}/{*}`);
  }

  if (newNode.items !== undefined) {
    if (oldNode.items === undefined) report('constraint_tightened', 'items now constrained');
    else nested(oldNode.items, newNode.items, `${path}/[]`);
  }
  const oldPrefix = Array.isArray(oldNode.prefixItems) ? oldNode.prefixItems : [];
  const newPrefix = Array.isArray(newNode.prefixItems) ? newNode.prefixItems : [];
  newPrefix.forEach((sub, i) => {
    if (i >= oldPrefix.length) report('constraint_tightened', `prefixItems[${i}] added`);
    else nested(oldPrefix[i], sub, `${path}/[${i}]`);
  });

  const keys = new Set([...Object.keys(oldNode), ...Object.keys(newNode)]);
  for (const key of keys) {
    if (!HANDLED.has(key) && !same(oldNode[key], newNode[key])) {
      report('unsupported_change', `"${key}" changed; the checker cannot prove it compatible, release a new version`);
    }
  }
}

function compareProperties(
  oldNode: JsonSchema,
  newNode: JsonSchema,
  path: string,
  ctx: Ctx,
  nested: (o: unknown, n: unknown, p: string) => void,
): void {
  const oldProps = isSchemaObject(oldNode.properties) ? oldNode.properties : {};
  const newProps = isSchemaObject(newNode.properties) ? newNode.properties : {};
  const oldRequired = new Set(Array.isArray(oldNode.required) ? (oldNode.required as string[]) : []);
  const newRequired = new Set(Array.isArray(newNode.required) ? (newNode.required as string[]) : []);
  const removed = Object.keys(oldProps).filter((name) => !(name in newProps));
  const added = Object.keys(newProps).filter((name) => !(name in oldProps));
  const report = (kind: BreakingKind, name: string, message: string) => ctx.out.push({ kind, path: `${path}/${name}`, message });

  const renamedTo = new Map<string, string>();
  for (const from of removed) {
    const to = added.find(
      (name) =>
        ![...renamedTo.values()].includes(name) && same(deref(oldProps[from], ctx.oldRoot), deref(newProps[name], ctx.newRoot)),
    );
    if (to) renamedTo.set(from, to);
  }
  for (const from of removed) {
    const to = renamedTo.get(from);
    if (to) report('renamed', from, `renamed to "${to}" (a removal plus an addition)`);
    else report('removed', from, 'field removed');
  }
  for (const name of added) {
    if (newRequired.has(name) && ![...renamedTo.values()].includes(name)) report('added_required', name, 'required field added');
  }
  for (const name of newRequired) {
    if (name in oldProps && name in newProps && !oldRequired.has(name))
      report('required_changed', name, 'changed from optional to required');
    if (!(name in newProps) && !oldRequired.has(name)) report('added_required', name, 'required field added');
  }
  for (const name of oldRequired) {
    if (name in newProps && !newRequired.has(name) && !ctx.readerCopy)
      report('required_changed', name, 'changed from required to optional');
  }
  for (const name of Object.keys(oldProps)) {
    if (name in newProps) nested(oldProps[name], newProps[name], `${path}/${name}`);
  }
}
