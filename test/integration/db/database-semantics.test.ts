import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma } from '../../../platform/db/database.js';
import { prepared } from '../../../platform/db/prepared.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';

/**
 * What the parts rely on from their database, on the run's server (the embedded one under the
 * README's `npm test`, DATABASE_URL's otherwise): the embedded default must behave as the deployed
 * one does. Each case failed on the former embedded database (PGlite behind one socket).
 */
describe.each(databaseKinds())('database semantics the parts rely on, on %s', (kind) => {
  let db: TestDatabase;
  const clients: pg.Client[] = [];

  const connect = async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    db = await createTestDatabase(kind, { poolSize: 8 });
    await db.prisma.$executeRawUnsafe('CREATE TABLE probe (id int PRIMARY KEY, note text NOT NULL)');
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
    await db?.close();
  });

  it('runs transactions on several connections at once (one waits on the other’s row lock, not on the server)', async () => {
    const [a, b] = [await connect(), await connect()];
    await a.query('BEGIN');
    await a.query("INSERT INTO probe VALUES (1, 'a')");
    await b.query('BEGIN');
    // b works on its own row while a's transaction is open.
    await b.query("INSERT INTO probe VALUES (2, 'b')");
    await b.query('COMMIT');
    await a.query('COMMIT');
    const rows = await db.prisma.$queryRaw<Array<{ id: number }>>`SELECT id FROM probe ORDER BY id`;
    expect(rows.map((r) => r.id)).toEqual([1, 2]);
  });

  it('delivers a NOTIFY committed on one connection to a LISTEN on another, at commit only', async () => {
    const [listener, writer] = [await connect(), await connect()];
    await listener.query('LISTEN probe_channel');
    const heard = new Promise<string>((resolve) => listener.once('notification', (n) => resolve(n.payload ?? '')));
    await writer.query('BEGIN');
    await writer.query("SELECT pg_notify('probe_channel', 'committed')");
    await writer.query('COMMIT');
    expect(await heard).toBe('committed');
  });

  it('holds an advisory lock against another connection until it is released', async () => {
    const [a, b] = [await connect(), await connect()];
    expect((await a.query('SELECT pg_try_advisory_lock(4242) AS got')).rows[0].got).toBe(true);
    expect((await b.query('SELECT pg_try_advisory_lock(4242) AS got')).rows[0].got).toBe(false);
    await a.query('SELECT pg_advisory_unlock(4242)');
    expect((await b.query('SELECT pg_try_advisory_lock(4242) AS got')).rows[0].got).toBe(true);
    await b.query('SELECT pg_advisory_unlock(4242)');
  });

  it('keeps named prepared statements working on a connection after one failed at execution (a NUL in a text)', async () => {
    const insert = (id: number, note: string) =>
      db.prisma.$executeRaw(prepared('probe_insert', Prisma.sql`INSERT INTO probe (id, note) VALUES (${id}, ${note})`));
    await insert(10, 'before');
    await expect(insert(11, 'bad \u0000 text')).rejects.toThrow();
    // The same named statement, and others, on every pooled connection, as before.
    await Promise.all([12, 13, 14, 15, 16, 17, 18, 19].map((id) => insert(id, `after ${id}`)));
    const count = await db.prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM probe WHERE id >= 10`;
    expect(Number(count[0].n)).toBe(9);
  });

  it('takes a batch of thousands of rows in one statement', async () => {
    const rows = Array.from({ length: 5_000 }, (_, i) => Prisma.sql`(${1_000 + i}, ${`row ${i}`})`);
    await db.prisma.$executeRaw`INSERT INTO probe (id, note) VALUES ${Prisma.join(rows)}`;
    const count = await db.prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM probe WHERE id >= 1000`;
    expect(Number(count[0].n)).toBe(5_000);
  });
});
