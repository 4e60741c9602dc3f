/**
 * The changelog guard of the error-code registry: what changed against the committed snapshot
 * (platform/errors/error-codes.snapshot.json, code → status), and which of those changes CHANGELOG.md
 * does not mention. A code counts as mentioned when it appears in backticks anywhere in the
 * changelog (an entry under Added, Changed or Removed).
 */
export type StatusByCode = Readonly<Record<string, number>>;

export interface CodeChanges {
  removed: string[];
  changed: Array<{ code: string; from: number; to: number }>;
  added: string[];
}

export function codeChanges(snapshot: StatusByCode, registry: StatusByCode): CodeChanges {
  const has = (table: StatusByCode, code: string) => Object.hasOwn(table, code);
  return {
    removed: Object.keys(snapshot).filter((code) => !has(registry, code)),
    changed: Object.keys(snapshot)
      .filter((code) => has(registry, code) && registry[code] !== snapshot[code])
      .map((code) => ({ code, from: snapshot[code], to: registry[code] })),
    added: Object.keys(registry).filter((code) => !has(snapshot, code)),
  };
}

export function mentions(changelog: string, code: string): boolean {
  return changelog.includes(`\`${code}\``);
}

/** The registry as the snapshot file holds it: code → status, sorted, one per line. */
export function snapshotJson(registry: StatusByCode): string {
  const sorted = Object.fromEntries(Object.entries(registry).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return `${JSON.stringify(sorted, null, 2)}\n`;
}
