import { defineConfig } from 'vitest/config';

// type-graphql must see the same `graphql` module instance as Apollo; without the alias vitest
// loads the ESM and CJS builds side by side ("another module or realm").
const alias = { graphql: 'graphql/index.js' };

export default defineConfig({
  resolve: { alias },
  test: {
    setupFiles: ['reflect-metadata'],
    projects: [
      {
        resolve: { alias },
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          setupFiles: ['reflect-metadata'],
          // vitest's 5 s is short for a cold ESLint run or a schema build on a loaded 2-core machine
          // (10.4 s seen, issue #27); a unit test still waits on nothing but CPU.
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'integration',
          globalSetup: ['test/support/embedded-database-setup.ts'],
          include: ['test/integration/**/*.test.ts'],
          setupFiles: ['reflect-metadata'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'e2e',
          globalSetup: ['test/support/embedded-database-setup.ts'],
          include: ['test/e2e/**/*.test.ts'],
          setupFiles: ['reflect-metadata'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // Each e2e file starts whole processes on their own ports; one at a time keeps the
          // 2-core machine from timing them out.
          fileParallelism: false,
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'reliability',
          include: ['test/reliability/**/*.test.ts'],
          setupFiles: ['reflect-metadata'],
          // Prints the summary table (faults, events, lost, duplicated, requests, 5xx) at the end.
          globalSetup: ['test/support/embedded-database-setup.ts', 'test/reliability/global-setup.ts'],
          testTimeout: 600_000,
          hookTimeout: 300_000,
          // Fault, load and soak files start their own processes and services; one at a time.
          fileParallelism: false,
        },
      },
      {
        resolve: { alias },
        test: {
          // `npm run test:services` only: suites whose subject is a service fault (a NATS cluster
          // losing nodes, Postgres and Redis killed and restarted, a relay leader frozen). They start
          // the machine's nats-server, postgres and redis-server binaries; `npm test` leaves them out
          // so that the README's command stays within 15 minutes on 2 cores.
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          setupFiles: ['reflect-metadata'],
          globalSetup: ['test/support/embedded-database-setup.ts', 'test/reliability/global-setup.ts'],
          testTimeout: 600_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        resolve: { alias },
        test: {
          // `npm run test:deploy`: builds the container image with podman and runs it (test/deploy/).
          name: 'deploy',
          include: ['test/deploy/**/*.test.ts'],
          setupFiles: ['reflect-metadata'],
          testTimeout: 600_000,
          // The first run makes the base image (debootstrap) and builds the image: minutes.
          hookTimeout: 3_600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
