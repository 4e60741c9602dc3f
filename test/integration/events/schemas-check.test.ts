import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEMAS_DIR } from '../../../events/schemas/registry.js';

const root = path.resolve(SCHEMAS_DIR, '../..');
/** Schema versions on disk, so adding an event type does not need this test to change. */
const committedVersions = (dir: string): number =>
  (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => /(^|\/)v\d+\.json$/.test(f)).length;
const run = (...args: string[]) =>
  spawnSync(path.join(root, 'node_modules/.bin/tsx'), ['events/schemas/check.cli.ts', ...args], { cwd: root, encoding: 'utf8' });

/** `npm run schemas:check` over a copy of the schema folder that each test edits. */
describe('schemas:check', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'schemas-check-'));
    fs.cpSync(SCHEMAS_DIR, dir, { recursive: true, filter: (src) => fs.statSync(src).isDirectory() || src.endsWith('.json') });
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const file = (rel: string) => path.join(dir, rel);
  const edit = (rel: string, change: (schema: Record<string, unknown>) => void) => {
    const schema = JSON.parse(fs.readFileSync(file(rel), 'utf8')) as Record<string, unknown>;
    change(schema);
    fs.writeFileSync(file(rel), JSON.stringify(schema, null, 2));
  };

  it('passes the committed set', () => {
    const result = run();
    expect(result.status).toBe(0);
    const count = committedVersions(SCHEMAS_DIR);
    expect(count).toBeGreaterThanOrEqual(12);
    expect(result.stdout).toContain(`schemas OK: ${count} schema versions, ${count} released`);
  });

  it('fails a breaking change to a released version with the list, and refuses to release it', () => {
    const rel = 'catalog/course_version/withdrawn/v1.json';
    const original = fs.readFileSync(file(rel), 'utf8');
    try {
      edit(rel, (s) => {
        s.required = ['courseVersionId', 'courseId', 'affectedEnrollmentsApprox'];
        delete (s.properties as Record<string, unknown>).reason;
      });
      const result = run('--dir', dir);
      expect(result.status).toBe(1);
      expect(result.stderr).toContain(
        'BREAKING catalog.course_version.withdrawn v1: a released version changed incompatibly; add v2 instead',
      );
      expect(result.stderr).toContain('  - removed at /reason: field removed');
      expect(result.stderr).toContain('  - required_changed at /affectedEnrollmentsApprox: changed from optional to required');
      expect(run('--dir', dir, '--release').status).toBe(1);
    } finally {
      fs.writeFileSync(file(rel), original);
    }
  });

  it('fails a schema Ajv cannot compile, naming it', () => {
    const rel = 'catalog/course/archived/v1.json';
    const original = fs.readFileSync(file(rel), 'utf8');
    try {
      edit(rel, (s) => (s.required = ['courseId', 'missing']));
      const result = run('--dir', dir);
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/^INVALID schema: .*"missing".*schemas:\/\/catalog\/course\/archived\/v1/);
    } finally {
      fs.writeFileSync(file(rel), original);
    }
  });

  it('accepts a new version, and --release records it with its date', () => {
    fs.copyFileSync(file('catalog/course/archived/v1.json'), file('catalog/course/archived/v2.json'));
    edit('catalog/course/archived/v2.json', (s) => {
      s.$id = 'schemas://catalog/course/archived/v2';
      (s.required as string[]).push('reason');
    });
    const check = run('--dir', dir);
    expect(check.status).toBe(0);
    expect(check.stdout).toContain('unreleased: catalog.course.archived v2');
    const release = run('--dir', dir, '--release', '--released-at', '2026-12-01T00:00:00.000Z');
    expect(release.status).toBe(0);
    const released = JSON.parse(fs.readFileSync(file('released.json'), 'utf8')) as {
      schemas: Array<{ eventType: string; version: number; releasedAt: string }>;
    };
    expect(released.schemas.find((e) => e.eventType === 'catalog.course.archived' && e.version === 2)?.releasedAt).toBe(
      '2026-12-01T00:00:00.000Z',
    );
    const count = committedVersions(dir);
    expect(count).toBe(committedVersions(SCHEMAS_DIR) + 1);
    expect(run('--dir', dir).stdout).toContain(`schemas OK: ${count} schema versions, ${count} released`);
  });
});
