import { defineConfig } from 'prisma/config';

// Only `prisma generate` runs here (the schema engine cannot be downloaded on this network); the
// URL is read from the environment so `prisma migrate deploy` still works where the engine exists.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost:5432/unused' },
});
