import fs from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/ids.js';
import { DEMO_TENANT_ID } from '../../subgraphs/catalog/demo/demo-catalog.data.js';
import type { TestDatabase } from '../support/database.js';
import { startSystemProcess, startSystemWithDatabase, systemDataDir, type SystemProcess } from '../support/system-process.js';

// The README's first query, word for word.
const FIRST_QUERY = '{ courses(first: 5) { edges { node { courseId slug title } } } }';
const SCOPES = 'catalog.read catalog.admin ai.assist ai.admin';
const run = promisify(execFile);

/** A token for `tenantId`: from `npm run token` on the process's DATA_DIR (the README's way) when given one. */
type TokenSource = (tenantId: string) => Promise<string>;

async function graphql(
  system: SystemProcess,
  tenantId: string,
  query: string,
  variables?: Record<string, unknown>,
  token: TokenSource = (t) => system.mintToken(t, SCOPES),
) {
  const response = await fetch(`${system.baseUrl}/graphql`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${await token(tenantId)}`,
      'x-tenant-id': tenantId,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ query, variables }),
  });
  expect(response.status).toBe(200);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return (await response.json()) as any;
}

async function rest(
  system: SystemProcess,
  tenantId: string,
  path: string,
  token: TokenSource = (t) => system.mintToken(t, SCOPES),
) {
  const response = await fetch(`${system.baseUrl}${path}`, {
    headers: { authorization: `Bearer ${await token(tenantId)}`, 'x-tenant-id': tenantId },
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: response.status, headers: response.headers, json: (await response.json()) as any };
}

/**
 * A fresh clone, `npm install && npm start` with no environment: the demo catalog arrives through
 * the bus (DEMO_DATA defaults on without DATABASE_URL and NATS_URL), so the README's first query
 * and the REST list show courses.
 */
describe('npm start with no environment', () => {
  let system: SystemProcess;
  let dataDir: string;
  // Only what the test needs to reach it (ports, the data folder): no service URL, no key, no DEMO_DATA.
  const noEnvironment = { AUTH_PUBLIC_KEY: undefined, DEMO_DATA: undefined, CREATE_PRODUCER_STREAMS: undefined };
  /** `npm run -s token -- --tenant … --scope …`, as the README does. */
  const token: TokenSource = async (tenantId) =>
    (
      await run('npm', ['run', '-s', 'token', '--', '--tenant', tenantId, '--scope', SCOPES], {
        env: { ...process.env, DATA_DIR: dataDir },
      })
    ).stdout.trim();

  beforeAll(async () => {
    dataDir = await systemDataDir('system-e2e-demo-');
    system = await startSystemProcess(noEnvironment, { dataDir });
  });
  afterAll(async () => {
    await system?.stop();
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  });

  const slugsOf = (body: { data: { courses: { edges: Array<{ node: { slug: string } }> } } }) =>
    body.data.courses.edges.map((edge) => edge.node.slug).sort();

  it("answers the README's first query with the demo courses, and GET /api/v1/courses lists them", async () => {
    const body = await graphql(system, DEMO_TENANT_ID, FIRST_QUERY, undefined, token);
    expect(body.errors).toBeUndefined();
    expect(slugsOf(body)).toEqual(['hand-hygiene', 'sepsis-recognition', 'triage-basics']);
    const sepsis = body.data.courses.edges.find((e: { node: { slug: string } }) => e.node.slug === 'sepsis-recognition').node;
    expect(sepsis.title).toEqual({ en: 'Recognising sepsis', de: 'Sepsis erkennen' });
    // Two versions of one course, made by the event path: sequence in publish order, the later one latest.
    const versions = await graphql(
      system,
      DEMO_TENANT_ID,
      'query($id: ID!) { courseVersions(courseId: $id) { versionLabel becameLatest publishedBy } }',
      { id: sepsis.courseId },
      token,
    );
    expect(versions.data.courseVersions).toEqual([
      { versionLabel: '1.0.0', becameLatest: true, publishedBy: 'usr_01JDDEM00000000000000000A1' },
      { versionLabel: '1.1.0', becameLatest: true, publishedBy: 'usr_01JDDEM00000000000000000A1' },
    ]);

    const list = await rest(system, DEMO_TENANT_ID, '/api/v1/courses', token);
    expect(list.status).toBe(200);
    expect(list.json.items.map((c: { slug: string }) => c.slug).sort()).toEqual([
      'hand-hygiene',
      'sepsis-recognition',
      'triage-basics',
    ]);
    // Another tenant sees none of it.
    expect(slugsOf(await graphql(system, newId('tenant'), FIRST_QUERY, undefined, token))).toEqual([]);
  });

  it('publishes it once: a restart on the same data changes nothing', async () => {
    const courses = '{ courses(first: 10) { edges { node { courseId slug etag } } } }';
    const before = await graphql(system, DEMO_TENANT_ID, courses, undefined, token);
    await system.stop();
    system = await startSystemProcess(noEnvironment, { dataDir });
    const after = await graphql(system, DEMO_TENANT_ID, courses, undefined, token);
    expect(after.data).toEqual(before.data);
    const sepsis = after.data.courses.edges.find((e: { node: { slug: string } }) => e.node.slug === 'sepsis-recognition').node;
    const versions = await graphql(
      system,
      DEMO_TENANT_ID,
      'query($id: ID!) { courseVersions(courseId: $id) { versionLabel } }',
      { id: sepsis.courseId },
      token,
    );
    expect(versions.data.courseVersions).toHaveLength(2);
  });
});

describe('a course stored with a CR/LF locale code (before consumed events were checked)', () => {
  let system: SystemProcess;
  let db: TestDatabase;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ system, db, close } = await startSystemWithDatabase());
  });
  afterAll(async () => close?.());

  it('keeps the REST list and the course answering 200, naming only valid locales in Content-Language', async () => {
    const tenantId = newId('tenant');
    const evil = 'en\r\nX-Injected: 1';
    const id = newId('course');
    await db.prisma.course.create({
      data: {
        id,
        tenantId,
        slug: 'crlf',
        title: { [evil]: 'Broken' },
        description: {},
        defaultLocale: evil,
        visibility: 'org',
        authors: [],
        taxonomy: [],
        tags: [],
        etag: '"crlf"',
      },
    });
    for (const url of ['/api/v1/courses', `/api/v1/courses/${id}`]) {
      const answer = await rest(system, tenantId, url);
      expect(answer.status, url).toBe(200);
      expect(answer.headers.get('x-injected')).toBeNull();
      expect(answer.headers.get('content-language')).toBeNull();
    }
  });
});
