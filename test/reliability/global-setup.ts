import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { figuresDocument, summaryTable, type RunFacts, type SuiteFigures } from '../support/reliability-figures.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Generated, not edited: docs/reliability.md links here. Written only when a run is recorded. */
export const FIGURES_FILE = path.join(ROOT, 'test/reliability/latest-figures.md');
/** Where an ordinary run's figures go: untracked, so a test run leaves a clean clone clean (issue #26). */
export const RUN_FIGURES_FILE = path.join(ROOT, '.data/test-figures/latest-figures.md');

/** The figures files of a project: `reliability` (npm test) and `faults` (npm run test:services). */
export function figuresFiles(project: string): { tracked: string; run: string } {
  if (project === 'reliability') return { tracked: FIGURES_FILE, run: RUN_FIGURES_FILE };
  return {
    tracked: path.join(ROOT, `test/${project}/latest-figures.md`),
    run: path.join(ROOT, `.data/test-figures/${project}-figures.md`),
  };
}

/** RECORD_FIGURES=true writes the tracked file, to be committed; any other run writes under .data/. */
export function figuresTarget(env: NodeJS.ProcessEnv = process.env, project = 'reliability'): string {
  const files = figuresFiles(project);
  return env.RECORD_FIGURES === 'true' ? files.tracked : files.run;
}

/**
 * Each reliability file records its figures; at the end the summary table is printed once and
 * written, with the facts of the run, to `figuresTarget()`.
 */
export default function setup(project: TestProject) {
  const startedAt = new Date();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reliability-figures-'));
  project.provide('reliabilityFiguresDir', dir);
  return () => {
    const all = fs
      .readdirSync(dir)
      .filter((name) => name.endsWith('.json'))
      .sort()
      .map((name) => JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as SuiteFigures);
    fs.rmSync(dir, { recursive: true, force: true });
    if (all.length === 0) return;
    const facts = runFacts(startedAt);
    console.log(`\nReliability summary (${facts.finishedAt.toISOString()}, ${facts.cpus} CPUs)\n\n${summaryTable(all)}\n`);
    const target = figuresTarget(process.env, project.name);
    const { tracked } = figuresFiles(project.name);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, figuresDocument(facts, all));
    console.log(
      target === tracked
        ? `Written to ${path.relative(ROOT, target)}; commit it to record this run.\n`
        : `Written to ${path.relative(ROOT, target)} (RECORD_FIGURES=true writes ${path.relative(ROOT, tracked)}, to commit).\n`,
    );
  };
}

function runFacts(startedAt: Date): RunFacts {
  const cpus = os.cpus();
  return {
    startedAt,
    finishedAt: new Date(),
    commit: commitOf(ROOT),
    node: process.version,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    services: ['DATABASE_URL', 'NATS_URL', 'REDIS_URL'].filter((name) => process.env[name]),
  };
}

/** The checked-out commit, marked `-dirty` when tracked files have changes. */
function commitOf(root: string): string {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
    // The figures file of an earlier, unrecorded run does not make the tree dirty.
    const changes = git('status', '--porcelain', '--untracked-files=no', '--', '.', ':!test/*/latest-figures.md');
    return `${git('rev-parse', '--short', 'HEAD')}${changes ? '-dirty' : ''}`;
  } catch {
    return 'unknown (no git)';
  }
}
