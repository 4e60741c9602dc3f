// The limit of `rest-list`: a bare Node http server answering GET /api/v1/courses?limit=N with the
// keyset SQL the catalog runs (tenant, id order, one extra row for hasNextPage) through `pg`, and
// the REST body's shape. No token check, no GraphQL, no second process: what is left when every
// layer of ours is taken away. Run as its own process by bench/rest-list.ts (env: DATABASE_URL,
// PORT, DB_POOL_SIZE).
//
// READ=repository reads the page through the catalog's own repository (`listCourses`) instead: a
// layer row that splits the distance to the limit into what the repository costs and what the
// GraphQL layers above it cost. Since 2026-11-29 listCourses is a named statement on the Prisma
// client's pool (platform/db/pool-reads.ts); before, Prisma's findMany.
import http from 'node:http';
import pg from 'pg';
import { createPrismaClient } from '../platform/db/database.js';
import { listCourses } from '../subgraphs/catalog/course/course.repo.js';

const POOL_SIZE = Number(process.env.DB_POOL_SIZE ?? 10);
const SQL = `SELECT id, "tenantId", slug, title, description, "defaultLocale", visibility, authors, taxonomy, tags, cover, etag,
  "sourceDraftId", state, "latestVersionLabel", "createdAt", "updatedAt"
  FROM "Course" WHERE "tenantId" = $1 AND ($3::text IS NULL OR id > $3) ORDER BY id ASC LIMIT $2`;

interface Row {
  id: string;
  slug: string;
  title: Record<string, string>;
  description: Record<string, string>;
  defaultLocale: string;
  visibility: string;
  authors: unknown[];
  taxonomy: unknown[];
  tags: string[];
  cover: unknown;
  etag: string;
  sourceDraftId: string | null;
}

const localized = (map: Record<string, string>, locale: string) => (map[locale] ? { locale, text: map[locale] } : null);

type ReadPage = (tenantId: string, limit: number, afterId: string | null) => Promise<Row[]>;

/** `limit + 1` rows of the tenant after `afterId`, in id order, through `pg` with the catalog's SQL. */
function pgReader(): { read: ReadPage; close(): Promise<void> } {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: POOL_SIZE });
  return {
    read: async (tenantId, limit, afterId) => (await pool.query<Row>(SQL, [tenantId, limit + 1, afterId])).rows,
    close: () => pool.end(),
  };
}

/** The same rows through the catalog's repository. */
function repositoryReader(): { read: ReadPage; close(): Promise<void> } {
  const db = createPrismaClient(process.env.DATABASE_URL ?? '', POOL_SIZE);
  return {
    read: async (tenantId, limit, afterId) => (await listCourses(db, tenantId, limit, afterId ?? undefined)) as unknown as Row[],
    close: () => db.$disconnect(),
  };
}

const reader = process.env.READ === 'repository' ? repositoryReader() : pgReader();

const server = http.createServer((req, res) => {
  void (async () => {
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname === '/healthz') return void res.end('ok');
      const tenantId = req.headers['x-tenant-id'];
      const limit = Math.min(100, Math.max(1, Number(url.searchParams.get('limit') ?? 20)));
      const after = url.searchParams.get('cursor');
      const rows = await reader.read(String(tenantId), limit, after ? Buffer.from(after, 'base64url').toString().slice(3) : null);
      const page = rows.slice(0, limit);
      const items = page.map((c) => ({
        courseId: c.id,
        slug: c.slug,
        title: c.title,
        description: c.description,
        defaultLocale: c.defaultLocale,
        visibility: c.visibility,
        authors: c.authors,
        taxonomy: c.taxonomy,
        tags: c.tags,
        cover: c.cover ?? null,
        etag: c.etag,
        sourceDraftId: c.sourceDraftId,
        localizedTitle: localized(c.title, c.defaultLocale),
        localizedDescription: localized(c.description, c.defaultLocale),
      }));
      const nextCursor = rows.length > limit ? Buffer.from(`c1:${page.at(-1)!.id}`).toString('base64url') : null;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ items, nextCursor }));
    } catch (error) {
      res.writeHead(500).end(String(error));
    }
  })();
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  void reader.close().then(() => process.exit(0));
});
