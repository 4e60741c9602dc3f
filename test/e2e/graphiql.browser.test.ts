import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/ids.js';
import { freePort } from '../support/child-env.js';
import { startSystemWithDatabase, type SystemProcess } from '../support/system-process.js';
import type { TestDatabase } from '../support/database.js';

/**
 * GraphiQL at /graphiql in a real browser (Debian's chromium, driven by playwright-core) with every
 * request that leaves 127.0.0.1 blocked: the page, its scripts and the schema docs work offline.
 * `.ci/run` installs chromium; in CI a missing browser fails this file, locally it prints why it
 * did not run.
 */
const CHROMIUM = '/usr/bin/chromium';
const available = fs.existsSync(CHROMIUM);
if (!available && !process.env.CI) {
  console.warn(`[skip] the GraphiQL browser test needs ${CHROMIUM}: apt-get install -y chromium (.ci/run does it).`);
}

const tenant = newId('tenant');
const courseId = newId('course');

let system: SystemProcess;
let db: TestDatabase;
let close: () => Promise<void>;
let context: BrowserContext;
let page: Page;
let userDataDir: string;
const external: string[] = [];
/** Two plain pages on other local origins: one CORS_ORIGINS allows, one it does not. */
let allowedPage: http.Server;
let strangerPage: http.Server;
let allowedOrigin: string;
let strangerOrigin: string;

async function servePage(port: number): Promise<http.Server> {
  const server = http.createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>ui</title>'),
  );
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}
// The headers editor; the variables one next to it is hidden while the Headers tab is open.
const HEADERS = '.graphiql-editor-tool .graphiql-editor:not(.hidden)';

/** What the page functions use of the browser (the test compiles without DOM types). */
interface BrowserWindow {
  document: { querySelector(selector: string): { CodeMirror: { setValue(value: string): void; getValue(): string } } | null };
}

/** The CodeMirror 5 instance inside `selector` (GraphiQL 3's editors). */
async function setEditor(selector: string, value: string): Promise<void> {
  await page.locator(`${selector} .CodeMirror`).first().waitFor();
  await page.evaluate(
    ([sel, text]) => {
      const element = (globalThis as unknown as BrowserWindow).document.querySelector(`${sel} .CodeMirror`);
      if (!element) throw new Error(`no editor at ${sel}`);
      element.CodeMirror.setValue(text);
    },
    [selector, value] as const,
  );
}

async function editorText(selector: string): Promise<string> {
  return page.evaluate((sel) => {
    const element = (globalThis as unknown as BrowserWindow).document.querySelector(`${sel} .CodeMirror`);
    return element?.CodeMirror.getValue() ?? '';
  }, selector);
}

describe.runIf(available || process.env.CI)('GraphiQL at /graphiql (offline)', () => {
  beforeAll(async () => {
    if (!available) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run installs it)`);
    const [allowedPort, strangerPort] = [await freePort(), await freePort()];
    allowedOrigin = `http://127.0.0.1:${allowedPort}`;
    strangerOrigin = `http://127.0.0.1:${strangerPort}`;
    [allowedPage, strangerPage] = [await servePage(allowedPort), await servePage(strangerPort)];
    ({ system, db, close } = await startSystemWithDatabase({
      CORS_ORIGINS: `https://studio.apollographql.com,${allowedOrigin}`,
    }));
    await db.prisma.course.create({
      data: {
        id: courseId,
        tenantId: tenant,
        slug: 'hand-hygiene-basics',
        title: { en: 'Hand hygiene basics' },
        description: { en: 'Five moments' },
        defaultLocale: 'en',
        visibility: 'org',
        authors: [],
        taxonomy: [],
        tags: [],
        etag: '"graphiql-e2e"',
      },
    });
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'graphiql-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    await context.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.hostname === '127.0.0.1') return route.continue();
      external.push(url.toString());
      return route.abort();
    });
    page = context.pages()[0] ?? (await context.newPage());
  });

  afterAll(async () => {
    await context?.close();
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
    await close?.();
    // A server that never started (beforeAll failed early) has nothing to close.
    await Promise.all(
      [allowedPage, strangerPage].map(
        (server) => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())),
      ),
    );
  });

  it('loads without any request leaving the machine, with the token and tenant headers to fill in', async () => {
    const sent: string[] = [];
    const onRequest = (request: { url(): string }) => sent.push(request.url());
    page.on('request', onRequest);
    const response = await page.goto(`${system.baseUrl}/graphiql`);
    expect(response?.status()).toBe(200);
    await page.locator('.graphiql-container').waitFor({ timeout: 30_000 });
    const headers = await editorText(HEADERS);
    expect(JSON.parse(headers)).toEqual({ Authorization: 'Bearer <token>', 'X-Tenant-Id': '<tenant>' });
    // The first screen says what to do; the placeholders are never sent (no 401 to start with).
    await expect.poll(() => editorText('.graphiql-response'), { timeout: 30_000 }).toContain('Put a token');
    page.off('request', onRequest);
    expect(sent.filter((url) => new URL(url).pathname === '/graphql')).toEqual([]);
    expect(external).toEqual([]);
  });

  it('runs a query with a token from the header editor and shows the result', async () => {
    const token = await system.mintToken(tenant, 'catalog.read');
    await setEditor(HEADERS, JSON.stringify({ Authorization: `Bearer ${token}`, 'X-Tenant-Id': tenant }, null, 2));
    await setEditor('.graphiql-query-editor', 'query Courses { courses(first: 5) { edges { node { courseId slug } } } }');
    await page.locator('.graphiql-execute-button').click();
    await expect.poll(() => editorText('.graphiql-response'), { timeout: 30_000 }).toContain(courseId);
    const result = JSON.parse(await editorText('.graphiql-response')) as unknown;
    expect(result).toEqual({ data: { courses: { edges: [{ node: { courseId, slug: 'hand-hygiene-basics' } }] } } });
  });

  it('shows the schema in the documentation explorer once the token is in', async () => {
    await page.getByRole('button', { name: /documentation explorer/i }).click();
    const docs = page.locator('.graphiql-doc-explorer');
    await docs.getByText('Query', { exact: true }).first().click({ timeout: 30_000 });
    await expect.poll(() => docs.innerText(), { timeout: 10_000 }).toContain('courses');
    await docs.getByText('CourseConnection', { exact: true }).first().click();
    await docs.getByText('CourseEdge', { exact: true }).first().click();
    await docs.getByText('Course', { exact: true }).first().click();
    await expect.poll(() => docs.innerText(), { timeout: 10_000 }).toContain('slug');
    expect(external).toEqual([]);
  });

  it('lets a page on an allowed origin call /graphql and a REST path with a token, and no other origin', async () => {
    const token = await system.mintToken(tenant, 'catalog.read');
    const calls = ([gateway, bearer, tenantId]: readonly [string, string, string]) =>
      Promise.all([
        fetch(`${gateway}/graphql`, {
          method: 'POST',
          headers: { authorization: `Bearer ${bearer}`, 'x-tenant-id': tenantId, 'content-type': 'application/json' },
          body: JSON.stringify({ query: '{ courses(first: 5) { edges { node { courseId } } } }' }),
        }).then(async (r) => ({ status: r.status, traceparent: r.headers.get('traceparent'), body: await r.json() })),
        fetch(`${gateway}/api/v1/courses`, { headers: { authorization: `Bearer ${bearer}`, 'x-tenant-id': tenantId } }).then(
          async (r) => ({ status: r.status, requestId: r.headers.get('x-request-id'), body: await r.json() }),
        ),
      ]).then(
        (answers) => answers,
        (error: Error) => `refused: ${error.name}`,
      );

    const ui = await context.newPage();
    await ui.goto(`${allowedOrigin}/`);
    const answers = await ui.evaluate(calls, [system.baseUrl, token, tenant] as const);
    expect(answers).toMatchObject([
      { status: 200, body: { data: { courses: { edges: [{ node: { courseId } }] } } } },
      { status: 200, body: { items: [{ courseId }] } },
    ]);
    // The headers a client reads are exposed to the page's script.
    const [graphql, rest] = answers as Array<{ traceparent?: string; requestId?: string }>;
    expect(graphql.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    expect(rest.requestId).toMatch(/^req_/);

    const other = await context.newPage();
    await other.goto(`${strangerOrigin}/`);
    expect(await other.evaluate(calls, [system.baseUrl, token, tenant] as const)).toBe('refused: TypeError');
    await Promise.all([ui.close(), other.close()]);
  });

  it('the Sandbox page, with Apollo’s CDN unreachable, offers /graphiql, which works', async () => {
    const blockedBefore = external.length;
    const response = await page.goto(`${system.baseUrl}/graphql`);
    expect(response?.headers()['content-type']).toContain('text/html');
    // This test's browser reaches nothing but 127.0.0.1: Sandbox's script from the CDN was refused.
    await expect.poll(() => external.length, { timeout: 30_000 }).toBeGreaterThan(blockedBefore);
    const link = page.locator('#offline-explorer a');
    await link.waitFor({ state: 'visible', timeout: 30_000 });
    await link.click();
    await page.locator('.graphiql-container').waitFor({ timeout: 30_000 });
    expect(new URL(page.url()).pathname).toBe('/graphiql');
    external.splice(blockedBefore);
  });
});
