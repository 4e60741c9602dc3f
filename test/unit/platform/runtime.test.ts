import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The project declares Node 24 and pins it through the npm registry's `node` package, so npm
 * scripts (`npm start`, `npm test`, `npm run token`, the bench) run on it whatever Node the machine
 * ships. These fail when the suite, or what npm scripts start, runs on another Node.
 */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const manifest = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
};

const major = (version: string) => Number(/(\d+)/.exec(version)?.[1]);

describe('runtime', () => {
  it('declares Node 22 or later and pins Node 24 LTS', () => {
    expect(manifest.engines.node).toBe('>=22');
    expect(major(manifest.devDependencies.node)).toBe(24);
  });

  it('runs this suite on the pinned Node', () => {
    expect(major(process.versions.node)).toBe(major(manifest.devDependencies.node));
  });

  it('runs npm scripts on the pinned Node, not on the machine one', () => {
    const version = execFileSync('npm', ['exec', '--offline', '-c', 'node -p process.version'], {
      cwd: ROOT,
      encoding: 'utf8',
      // A PATH without the project's bin folder, as a shell on a fresh clone has it.
      env: {
        ...process.env,
        PATH: (process.env.PATH ?? '')
          .split(':')
          .filter((dir) => !dir.includes('node_modules'))
          .join(':'),
      },
    }).trim();
    expect(major(version)).toBe(major(manifest.devDependencies.node));
  });
});
