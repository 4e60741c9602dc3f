// `npm run test:services` runs the suites again against the real services; without all three
// variables it would quietly skip what it exists to run, so it refuses, naming what is missing.
const variables = ['DATABASE_URL', 'NATS_URL', 'REDIS_URL'] as const;
const missing = variables.filter((name) => !process.env[name]?.trim());
if (missing.length > 0) {
  console.error(
    `test:services runs against real services: set ${missing.join(', ')} (for example DATABASE_URL=postgresql://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379 NATS_URL=nats://127.0.0.1:4222)`,
  );
  process.exit(2);
}
