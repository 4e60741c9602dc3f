import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actualShape, diffShapes, expectedShape } from '../../prisma/schema-drift.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/database.js';

const SCHEMA = path.resolve('prisma/schema.prisma');

describe.each(databaseKinds())('migrated database matches schema.prisma on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });
  afterAll(async () => db?.close());

  it('has every model, column, type, nullability, index and foreign key, and nothing else', async () => {
    const expected = await expectedShape(SCHEMA);
    const actual = await actualShape(db.url);
    expect(expected.columns.length).toBeGreaterThan(100);
    expect(diffShapes(expected, actual)).toEqual([]);
  });

  it('notices a column the migrations did not create', async () => {
    await db.prisma.$executeRawUnsafe('ALTER TABLE "Course" ADD COLUMN "rogue" TEXT');
    const diff = diffShapes(await expectedShape(SCHEMA), await actualShape(db.url));
    expect(diff).toEqual(['- Course.rogue: text null   (in the database, not in schema.prisma)']);
    await db.prisma.$executeRawUnsafe('ALTER TABLE "Course" DROP COLUMN "rogue"');
  });

  it("notices a partial index whose predicate is not the schema's", async () => {
    await db.prisma.$executeRawUnsafe('DROP INDEX "OutboxEvent_unpublished_idx"');
    await db.prisma.$executeRawUnsafe('CREATE INDEX "OutboxEvent_unpublished_idx" ON "OutboxEvent"(id) WHERE attempts > 0');
    const diff = diffShapes(await expectedShape(SCHEMA), await actualShape(db.url));
    expect(diff.sort()).toEqual([
      '+ index OutboxEvent(id) WHERE "publishedAt" IS NULL   (in schema.prisma, missing in the database)',
      '- index OutboxEvent(id) WHERE attempts > 0   (in the database, not in schema.prisma)',
    ]);
    await db.prisma.$executeRawUnsafe('DROP INDEX "OutboxEvent_unpublished_idx"');
    await db.prisma.$executeRawUnsafe(
      'CREATE INDEX "OutboxEvent_unpublished_idx" ON "OutboxEvent"(id) WHERE "publishedAt" IS NULL',
    );
    expect(diffShapes(await expectedShape(SCHEMA), await actualShape(db.url))).toEqual([]);
  });
});
