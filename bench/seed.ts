// Bench data written by set-based SQL (INSERT ... SELECT generate_series): a million courses in
// one statement takes seconds, where row-by-row inserts would take an hour.
import pg from 'pg';

/** The tenant every scenario measures. Crockford base32 (no I, L, O, U), as the id rules want. */
export const BENCH_TENANT = 'ten_01JDBENCH0000000000000000A';
export const OTHER_TENANTS = Array.from({ length: 9 }, (_, i) => `ten_01JDBENCH00000000000000000${i + 1}`.slice(0, 30));

const AUTHOR = 'usr_01JDBENCHAVTH0R000000000000'.slice(0, 30);

/** `<prefix>_` + n as 26 upper-case hex digits: valid Crockford ids that sort in n order. */
function idSql(prefix: string, n: string): string {
  return `'${prefix}_' || upper(lpad(to_hex(${n}), 26, '0'))`;
}

/** The id of the n-th seeded course (n from 0), as `seedCourses` writes it. */
export function courseId(n: number): string {
  return `crs_${n.toString(16).toUpperCase().padStart(26, '0')}`;
}

export interface SeedCoursesOptions {
  /** Courses of BENCH_TENANT. */
  courses: number;
  /** Bench-tenant courses already seeded (grow a seeded database step by step). */
  from?: number;
  /**
   * As many courses again, spread over nine other tenants and interleaved with the bench tenant's
   * ids (even n: bench tenant; odd n: another), so its rows are not one contiguous key range.
   */
  otherTenants?: boolean;
  versionsPerCourse?: number;
  /** AIProvenance rows with the course as subjectRef (what Course.aiProvenance reads). */
  provenancePerCourse?: number;
}

/**
 * Seeds courses straight into the catalog tables. Course n (n = 0, 1, ...) has id courseId(n);
 * with other tenants, bench-tenant course k is n = 2k. With `from`, adds courses from..courses-1.
 */
export async function seedCourses(url: string, options: SeedCoursesOptions): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const step = options.otherTenants ? 2 : 1;
    const total = options.courses * step;
    const first = (options.from ?? 0) * step;
    const others = `ARRAY[${OTHER_TENANTS.map((t) => `'${t}'`).join(',')}]`;
    const tenantOf = options.otherTenants
      ? `CASE WHEN n % 2 = 0 THEN '${BENCH_TENANT}' ELSE (${others})[1 + (n / 2) % 9] END`
      : `'${BENCH_TENANT}'`;
    await client.query(`
      INSERT INTO "Course" (id, "tenantId", slug, title, description, "defaultLocale", visibility, authors, taxonomy, tags,
                            etag, state, "versionSeq", "latestVersionLabel", "createdAt", "updatedAt")
      SELECT ${idSql('crs', 'n')}, ${tenantOf}, 'bench-course-' || n,
             jsonb_build_object('en', 'Bench course ' || n, 'fr', 'Cours ' || n),
             jsonb_build_object('en', 'What bench course ' || n || ' teaches, in a sentence or two of text.'),
             'en', 'org',
             jsonb_build_array(jsonb_build_object('userId', '${AUTHOR}', 'role', 'author', 'displayName', 'Bench Author')),
             '[]'::jsonb, ARRAY['bench', 'cardiology'], md5(n::text), 'registered',
             ${options.versionsPerCourse ?? 0}, ${options.versionsPerCourse ? `'1.${options.versionsPerCourse - 1}.0'` : 'NULL'},
             now(), now()
      FROM generate_series(${first}, ${total - 1}) AS n`);
    if (options.versionsPerCourse) {
      const v = options.versionsPerCourse;
      await client.query(`
        INSERT INTO "CourseVersion" (id, "tenantId", "courseId", "versionLabel", major, minor, patch, "publishedBy",
                                     "durationMinutes", locales, "playPackageId", "playPackageSha256", "playPackageFormat",
                                     state, "becameLatest", sequence, "createdAt", "updatedAt")
        SELECT ${idSql('crv', `n * ${v} + s`)}, c."tenantId", c.id, '1.' || s || '.0', 1, s, 0, '${AUTHOR}',
               30 + s, ARRAY['en'], ${idSql('pkg', `n * ${v} + s`)}, md5(n::text) || md5(s::text), 'v1',
               'published', s = ${v - 1}, s + 1, now(), now()
        FROM generate_series(${first}, ${total - 1}) AS n
        JOIN "Course" c ON c.id = ${idSql('crs', 'n')}
        CROSS JOIN generate_series(0, ${v - 1}) AS s`);
    }
    if (options.provenancePerCourse) {
      const p = options.provenancePerCourse;
      await client.query(`
        INSERT INTO "AIProvenance" (id, "tenantId", "actorType", "actorId", "featureKey", status, mode, provider, model,
                                    "outputHash", "inputTokens", "outputTokens", "subjectRef", "latencyMs", "createdAt", "completedAt")
        SELECT ${idSql('prv', `n * ${p} + s`)}, c."tenantId", 'service', 'svc-bench', 'course.summary', 'completed', 'live',
               'mock', 'mock-1', 'sha256:' || md5(n::text), 100, 50, c.id, 3,
               now() - make_interval(mins => s), now() - make_interval(mins => s)
        FROM generate_series(${first}, ${total - 1}) AS n
        JOIN "Course" c ON c.id = ${idSql('crs', 'n')}
        CROSS JOIN generate_series(0, ${p - 1}) AS s`);
    }
    await client.query('ANALYZE');
  } finally {
    await client.end();
  }
}
