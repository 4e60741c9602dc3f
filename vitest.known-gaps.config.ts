import { defineConfig } from 'vitest/config';

// Tests that prove a gap we know of and have not closed yet. They fail today, on purpose, and are
// kept out of `npm test` (a red CI would block every other change from landing) but stay runnable:
// `npm run test:known-gaps`. See README, "Known gap". Move a file back into its suite when it passes.
const alias = { graphql: 'graphql/index.js' };

export default defineConfig({
  resolve: { alias },
  test: {
    include: ['test/known-gaps/**/*.test.ts'],
    setupFiles: ['reflect-metadata'],
    globalSetup: ['test/reliability/global-setup.ts'],
    testTimeout: 600_000,
    hookTimeout: 300_000,
    fileParallelism: false,
  },
});
