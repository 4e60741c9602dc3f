import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../../platform/errors/error-codes.js';
import { renderErrorCodesDoc } from '../../../platform/errors/error-codes-doc.js';
import { ERROR_CODES_DOC, errorCodesMarkdown } from '../../../platform/errors/error-codes-doc.logic.js';
import { codeChanges, mentions, snapshotJson, type StatusByCode } from '../../support/error-code-changes.js';
import { ROOT } from '../../support/error-code-sites.js';

/**
 * Error codes are a contract with client teams: the published list (docs/error-codes.md) is the
 * registry's, and a code that disappears or changes status is announced in CHANGELOG.md. The
 * snapshot (platform/errors/error-codes.snapshot.json) is the registry as last released to clients; it is
 * edited by hand, never by a script, so the guard below sees each change once.
 */
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const SNAPSHOT_FILE = 'platform/errors/error-codes.snapshot.json';
const registry: StatusByCode = Object.fromEntries(Object.entries(ERROR_CODES).map(([code, { status }]) => [code, status]));
const snapshot = JSON.parse(read(SNAPSHOT_FILE)) as StatusByCode;
/**
 * The [Unreleased] section: a change is announced where it will be released; an entry about the
 * same code in an older release says nothing about this change.
 */
function unreleasedSection(changelog: string): string {
  const start = changelog.indexOf('## [Unreleased]');
  if (start < 0) throw new Error('CHANGELOG.md has no [Unreleased] section (Keep a Changelog)');
  const end = changelog.indexOf('\n## [', start + 1);
  return changelog.slice(start, end < 0 ? undefined : end);
}
const changelog = unreleasedSection(read('CHANGELOG.md'));

describe('docs/error-codes.md', () => {
  it('is what `npm run docs:error-codes` writes from the registry', async () => {
    expect(read(ERROR_CODES_DOC), 'run `npm run docs:error-codes` and commit docs/error-codes.md').toBe(
      await renderErrorCodesDoc(),
    );
  });

  it('has one row per code with its status and meaning', () => {
    const markdown = errorCodesMarkdown({ 'example.code': { status: 418, meaning: 'A teapot' } });
    expect(markdown).toContain('| `example.code` | 418 | A teapot |');
    expect(errorCodesMarkdown(ERROR_CODES).match(/^\| `/gm)).toHaveLength(Object.keys(ERROR_CODES).length);
  });

  it('is linked from the REST error-code section and the client guide', () => {
    expect(read('docs/rest-compat.md')).toMatch(/## Error codes[\s\S]*\]\(error-codes\.md\)/);
    expect(read('docs/clients.md')).toContain('](error-codes.md)');
  });
});

describe('the error-code changelog guard', () => {
  const changes = codeChanges(snapshot, registry);

  it('finds no code removed or given another status that CHANGELOG.md does not mention', () => {
    const unannounced = [
      ...changes.removed.filter((code) => !mentions(changelog, code)).map((code) => `${code} was removed (${snapshot[code]})`),
      ...changes.changed.filter(({ code }) => !mentions(changelog, code)).map(({ code, from, to }) => `${code}: ${from} → ${to}`),
    ];
    expect(
      unannounced,
      `clients code against these codes: add a CHANGELOG.md entry under [Unreleased] (Changed or Removed) naming each in backticks, then update ${SNAPSHOT_FILE}`,
    ).toEqual([]);
  });

  it('finds no new code missing from the snapshot or from CHANGELOG.md', () => {
    const unannounced = changes.added.filter((code) => !mentions(changelog, code));
    expect(unannounced, 'mention these new codes under "Added" in CHANGELOG.md ([Unreleased]), in backticks').toEqual([]);
    expect(changes.added, `add these new codes (code: status) to ${SNAPSHOT_FILE}`).toEqual([]);
  });

  it('holds the snapshot equal to the registry once the changes are announced', () => {
    expect(snapshot, `update ${SNAPSHOT_FILE} by hand (code: status)`).toEqual(registry);
    expect(read(SNAPSHOT_FILE), `${SNAPSHOT_FILE}: sorted by code, two-space JSON`).toBe(snapshotJson(registry));
  });

  it('sees a removed code, a changed status and a new code', () => {
    const before = { 'a.kept': 400, 'a.gone': 404, 'a.moved': 409 };
    const after = { 'a.kept': 400, 'a.moved': 412, 'a.new': 422 };
    expect(codeChanges(before, after)).toEqual({
      removed: ['a.gone'],
      changed: [{ code: 'a.moved', from: 409, to: 412 }],
      added: ['a.new'],
    });
    expect(mentions('- Error code `a.gone` (404) removed', 'a.gone')).toBe(true);
    // A code named without backticks, or a longer code that starts with it, is not a mention.
    expect(mentions('- a.gone removed; `a.gone_too`', 'a.gone')).toBe(false);
  });

  it('announces the 2026-11-24 renames listed in docs/rest-compat.md: every old spelling and its new code', () => {
    const doc = read('docs/rest-compat.md');
    const start = doc.indexOf('**Renamed codes (2026-11-24).**');
    expect(start, 'docs/rest-compat.md lists the 2026-11-24 renames').toBeGreaterThan(0);
    const table = doc.slice(start, doc.indexOf('\n\n', doc.indexOf('| before', start)));
    // Every code the table names (`request.` alone is its "request. + the lower-case name" prefix).
    const named = [...table.matchAll(/`([A-Za-z_.]+)`/g)].map(([, code]) => code).filter((code) => !code.endsWith('.'));
    expect(named).toEqual(expect.arrayContaining(['ILLEGAL_TRANSITION', 'lifecycle.illegal_transition', 'not_implemented']));
    expect(named.filter((code) => !mentions(changelog, code))).toEqual([]);
  });

  it('takes the codes added recently as announced (CHANGELOG.md [Unreleased] names them)', () => {
    expect(unreleasedSection('# Changelog\n\n## [Unreleased]\n\n- `a.new`\n\n## [1.0.0]\n\n- `a.old`\n')).not.toContain('a.old');
    for (const code of ['review.self_review_forbidden', 'query.string_too_long', 'request.unsupported_content_encoding']) {
      expect(Object.hasOwn(snapshot, code)).toBe(true);
      expect(mentions(changelog, code)).toBe(true);
    }
  });
});
