import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma } from '../../../platform/db/database.js';
import { prepared } from '../../../platform/db/prepared.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';

describe.each(databaseKinds())('named prepared statements on %s', (kind) => {
  let db: TestDatabase;

  beforeAll(async () => {
    // One connection: what it has prepared is what pg_prepared_statements shows.
    db = await createTestDatabase(kind, { poolSize: 1 });
  });
  afterAll(async () => db?.close());

  const preparedNames = async () =>
    (await db.prisma.$queryRaw<Array<{ name: string }>>`SELECT name FROM pg_prepared_statements ORDER BY name`).map(
      (r) => r.name,
    );

  const named = 1;

  it('prepares a marked statement once on its connection (Postgres) and binds each execution’s own values', async () => {
    const double = (n: number) =>
      db.prisma.$queryRaw<Array<{ doubled: number }>>(prepared('probe_double', Prisma.sql`SELECT ${n}::int * 2 AS doubled`));

    expect(await double(2)).toEqual([{ doubled: 4 }]);
    expect(await double(21)).toEqual([{ doubled: 42 }]);

    const names = await preparedNames();
    expect(names.filter((name) => name.startsWith('probe_double_'))).toHaveLength(named);
  });

  it('leaves an unmarked statement unprepared', async () => {
    const before = await preparedNames();
    await db.prisma.$queryRaw`SELECT ${7}::int AS seven`;
    expect(await preparedNames()).toEqual(before);
  });
});
