import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId, newUlid } from '../../../platform/ids.js';
import { courseRow } from '../../support/course-row.js';
import { startSystemWithDatabase, type SystemProcess } from '../../support/system-process.js';

/**
 * The finding of issue #25 over HTTP, as a cache sees it: after org -> marketplace the REST ETag
 * must move, so If-None-Match with the old tag is answered with the new course (200), not 304,
 * and If-Match with the old tag is stale (412).
 */
const tenant = newId('tenant');
let system: SystemProcess;
let close: () => Promise<void>;
let token: string;
const course = courseRow(tenant, { visibility: 'org' });
const path = `/api/v1/courses/${course.id}`;

beforeAll(async () => {
  const started = await startSystemWithDatabase();
  ({ system, close } = started);
  token = await system.mintToken(tenant, 'catalog.read catalog.admin');
  await started.db.prisma.course.create({ data: course });
});
afterAll(async () => close?.());

const headers = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, 'x-tenant-id': tenant, ...extra });
const get = (extra: Record<string, string> = {}) => fetch(`${system.baseUrl}${path}`, { headers: headers(extra) });

it('moves the ETag when the visibility changes: the old tag is neither fresh (If-None-Match) nor current (If-Match)', async () => {
  const before = await get();
  expect(before.status).toBe(200);
  const oldTag = before.headers.get('etag')!;
  expect((await get({ 'if-none-match': oldTag })).status).toBe(304);

  const changed = await fetch(`${system.baseUrl}/graphql`, {
    method: 'POST',
    headers: headers({ 'content-type': 'application/json', 'idempotency-key': newUlid() }),
    body: JSON.stringify({
      query: 'mutation($id: ID!) { changeCourseVisibility(courseId: $id, to: "marketplace", reason: "launch") { etag } }',
      variables: { id: course.id },
    }),
  });
  const answer = (await changed.json()) as { data: { changeCourseVisibility: { etag: string } } };
  expect(changed.status, JSON.stringify(answer)).toBe(200);

  const after = await get({ 'if-none-match': oldTag });
  expect(after.status).toBe(200);
  expect(((await after.json()) as { visibility: string }).visibility).toBe('marketplace');
  const newTag = after.headers.get('etag')!;
  expect(newTag).not.toBe(oldTag);
  expect(newTag).toBe(answer.data.changeCourseVisibility.etag);
  expect((await get({ 'if-none-match': newTag })).status).toBe(304);

  const stale = await fetch(`${system.baseUrl}${path}`, {
    method: 'PATCH',
    headers: headers({ 'content-type': 'application/json', 'idempotency-key': newUlid(), 'if-match': oldTag }),
    body: JSON.stringify({ tags: ['late'] }),
  });
  expect(stale.status).toBe(412);
});
