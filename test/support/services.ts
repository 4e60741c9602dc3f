/**
 * Real-service gating. A suite that needs Postgres, NATS or Redis runs when the variable is set
 * and is otherwise skipped with one printed line naming the variable, so a green run never hides
 * what it did not test.
 */
const announced = new Set<string>();

export function realService(variable: 'DATABASE_URL' | 'NATS_URL' | 'REDIS_URL'): string | undefined {
  const value = process.env[variable];
  if (!value && !announced.has(variable)) {
    announced.add(variable);
    console.warn(`[skip] real-service suites need ${variable}; set it to run them (see README, "Tests").`);
  }
  return value || undefined;
}
