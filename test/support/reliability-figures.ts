import fs from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';

/**
 * Figures of one reliability suite, collected by `test/reliability/global-setup.ts` and printed
 * as one table when the project ends (README, "Reliability").
 */
export interface SuiteFigures {
  suite: string;
  faultsInjected: number;
  eventsChecked: number;
  lost: number;
  duplicated: number;
  requestsTried: number;
  serverErrors: number;
  /** Further measured facts worth printing (bounds, rates, settings), one line each. */
  notes?: string[];
}

declare module 'vitest' {
  export interface ProvidedContext {
    reliabilityFiguresDir: string;
  }
}

export function recordFigures(figures: SuiteFigures): void {
  const line = `[reliability] ${figures.suite}: faults=${figures.faultsInjected} events=${figures.eventsChecked} lost=${figures.lost} duplicated=${figures.duplicated} requests=${figures.requestsTried} 5xx=${figures.serverErrors}`;
  console.log([line, ...(figures.notes ?? []).map((note) => `  ${note}`)].join('\n'));
  let dir: string | undefined;
  try {
    dir = inject('reliabilityFiguresDir');
  } catch {
    dir = undefined;
  }
  if (!dir) return;
  const name = figures.suite.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
  fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(figures));
}

/** The table the project prints at its end. */
export function summaryTable(all: SuiteFigures[]): string {
  const header = ['suite', 'faults injected', 'events checked', 'lost', 'duplicated', 'requests tried', '5xx'];
  const rows = all.map((f) => [
    f.suite,
    String(f.faultsInjected),
    String(f.eventsChecked),
    String(f.lost),
    String(f.duplicated),
    String(f.requestsTried),
    String(f.serverErrors),
  ]);
  const sum = (pick: (f: SuiteFigures) => number) => String(all.reduce((s, f) => s + pick(f), 0));
  rows.push([
    'total',
    sum((f) => f.faultsInjected),
    sum((f) => f.eventsChecked),
    sum((f) => f.lost),
    sum((f) => f.duplicated),
    sum((f) => f.requestsTried),
    sum((f) => f.serverErrors),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `${'-'.repeat(w + 1)}-` : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  const notes = all.flatMap((f) => (f.notes ?? []).map((n) => `- ${f.suite}: ${n}`));
  return [line(header), rule, ...rows.map(line), ...(notes.length ? ['', ...notes] : [])].join('\n');
}
