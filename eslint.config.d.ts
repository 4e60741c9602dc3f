// Types of what eslint.config.js exports for tests (test/unit/house-rules.test.ts).
import type { Linter } from 'eslint';

export function floorsOf(mayImport: Record<string, readonly string[]>): string[];
declare const config: Linter.Config[];
export default config;
