import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FIGURES_FILE, figuresFiles, figuresTarget, RUN_FIGURES_FILE } from '../../reliability/global-setup.js';
import { figuresDocument, type SuiteFigures } from '../../support/reliability-figures.js';

const suite = (name: string, requests: number, serverErrors = 0): SuiteFigures => ({
  suite: name,
  faultsInjected: 2,
  eventsChecked: 10,
  lost: 0,
  duplicated: 0,
  requestsTried: requests,
  serverErrors,
  notes: [`${name} note`],
});

describe('the reliability figures file', () => {
  it('holds the run facts, the summary table with its total, and the notes', () => {
    const document = figuresDocument(
      {
        startedAt: new Date('2026-11-23T10:00:00Z'),
        finishedAt: new Date('2026-11-23T10:07:30Z'),
        commit: 'abc1234',
        node: 'v24.21.0',
        cpus: 2,
        cpuModel: 'Test CPU',
        memoryGiB: 7.8,
        os: 'Linux 6.1 x64',
        services: ['DATABASE_URL', 'REDIS_URL'],
      },
      [suite('soak (mixed load)', 100), suite('token attacks', 50, 1)],
    );
    expect(document).toContain('2026-11-23T10:00:00.000Z to 2026-11-23T10:07:30.000Z (450 s), commit `abc1234`');
    expect(document).toContain('Node v24.21.0 on Linux 6.1 x64');
    expect(document).toContain('2 × Test CPU, 7.8 GiB memory');
    expect(document).toContain('real services set: DATABASE_URL, REDIS_URL');
    expect(document).toMatch(/\| soak \(mixed load\) +\| +2 \| +10 \| +0 \| +0 \| +100 \| +0 \|/);
    expect(document).toMatch(/\| total +\| +4 \| +20 \| +0 \| +0 \| +150 \| +1 \|/);
    expect(document).toContain('- token attacks: token attacks note');
  });
});

describe('where a run writes its figures', () => {
  it('writes an untracked file unless RECORD_FIGURES=true asks for the tracked one (a clean clone stays clean)', () => {
    const root = fileURLToPath(new URL('../../..', import.meta.url));
    const ignored = (file: string) =>
      spawnSync('git', ['check-ignore', '-q', path.relative(root, file)], { cwd: root }).status === 0;
    expect(figuresTarget({})).toBe(RUN_FIGURES_FILE);
    expect(ignored(figuresTarget({}))).toBe(true);
    expect(figuresTarget({ RECORD_FIGURES: 'true' })).toBe(FIGURES_FILE);
    expect(ignored(FIGURES_FILE)).toBe(false);
  });

  it('gives the faults project files of its own, so that neither project overwrites the other', () => {
    const faults = figuresFiles('faults');
    expect(figuresTarget({}, 'faults')).toBe(faults.run);
    expect(figuresTarget({ RECORD_FIGURES: 'true' }, 'faults')).toBe(faults.tracked);
    expect(faults.run).not.toBe(RUN_FIGURES_FILE);
    expect(faults.tracked).not.toBe(FIGURES_FILE);
  });
});
