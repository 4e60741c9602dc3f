import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { summaryTable, type SuiteFigures } from '../support/reliability-figures.js';

/** Each reliability file records its figures; the summary table is printed once, at the end. */
export default function setup(project: TestProject) {
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
    console.log(`\nReliability summary (${new Date().toISOString()}, ${os.cpus().length} CPUs)\n\n${summaryTable(all)}\n`);
  };
}
