import { canonicalHash } from '../../platform/text/canonical-json.js';
import { breakingChanges, type BreakingChange } from './compat.logic.js';
import type { ReleasedEntry, SchemaFile } from './registry.js';

export interface ReleaseCheck {
  /** Released versions changed incompatibly (or removed): the registry refuses these. */
  breaking: Array<{ eventType: string; version: number; changes: BreakingChange[] }>;
  /** Released versions changed compatibly; `--release` records them. */
  compatible: Array<{ eventType: string; version: number }>;
  /** Versions not released yet. */
  unreleased: Array<{ eventType: string; version: number }>;
}

const key = (name: string, version: number) => `${name}@${version}`;

export interface ReleaseOptions {
  /** Event types whose schema is our reader's copy of another service's (see CompatOptions). */
  readerCopy?: (eventType: string) => boolean;
}

export function checkReleased(released: ReleasedEntry[], current: SchemaFile[], options: ReleaseOptions = {}): ReleaseCheck {
  const byKey = new Map(current.map((file) => [key(file.name, file.version), file]));
  const releasedKeys = new Set(released.map((entry) => key(entry.eventType, entry.version)));
  const result: ReleaseCheck = { breaking: [], compatible: [], unreleased: [] };
  for (const entry of released) {
    const file = byKey.get(key(entry.eventType, entry.version));
    const id = { eventType: entry.eventType, version: entry.version };
    if (canonicalHash(entry.schema) !== entry.digest) {
      result.breaking.push({
        ...id,
        changes: [
          { kind: 'unsupported_change', path: '/', message: 'released.json was edited: its digest does not match its schema' },
        ],
      });
      continue;
    }
    if (!file) {
      result.breaking.push({
        ...id,
        changes: [{ kind: 'version_removed', path: '/', message: 'a released version has no schema file any more' }],
      });
      continue;
    }
    if (canonicalHash(file.schema) === entry.digest) continue;
    const changes = breakingChanges(entry.schema, file.schema, { readerCopy: options.readerCopy?.(entry.eventType) });
    if (changes.length) result.breaking.push({ ...id, changes });
    else result.compatible.push(id);
  }
  for (const file of current) {
    if (!releasedKeys.has(key(file.name, file.version))) result.unreleased.push({ eventType: file.name, version: file.version });
  }
  return result;
}

/**
 * The released set after releasing the current files: compatible edits replace the recorded
 * schema (keeping the version's release date), new versions are dated `now`. Refuses while any
 * released version would change incompatibly: that change needs a new version instead.
 */
export function releaseCurrent(
  released: ReleasedEntry[],
  current: SchemaFile[],
  now: Date,
  options: ReleaseOptions = {},
): ReleasedEntry[] {
  const check = checkReleased(released, current, options);
  if (check.breaking.length) throw new Error(formatCheck(check));
  const previous = new Map(released.map((entry) => [key(entry.eventType, entry.version), entry]));
  return current.map((file) => ({
    eventType: file.name,
    version: file.version,
    releasedAt: previous.get(key(file.name, file.version))?.releasedAt ?? now.toISOString(),
    digest: canonicalHash(file.schema),
    schema: file.schema,
  }));
}

export function formatCheck(check: ReleaseCheck): string {
  const lines: string[] = [];
  for (const item of check.breaking) {
    lines.push(
      `BREAKING ${item.eventType} v${item.version}: a released version changed incompatibly; add v${item.version + 1} instead`,
    );
    for (const change of item.changes) lines.push(`  - ${change.kind} at ${change.path}: ${change.message}`);
  }
  for (const item of check.compatible)
    lines.push(`compatible change in ${item.eventType} v${item.version} (record it with --release)`);
  for (const item of check.unreleased)
    lines.push(`unreleased: ${item.eventType} v${item.version} (record it with --release when it ships)`);
  return lines.join('\n');
}
