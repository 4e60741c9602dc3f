import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/ids.js';
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
    ({ system, db, close } = await startSystemWithDatabase());
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
  });

  it('loads without any request leaving the machine, with the token and tenant headers to fill in', async () => {
    const response = await page.goto(`${system.baseUrl}/graphiql`);
    expect(response?.status()).toBe(200);
    await page.locator('.graphiql-container').waitFor({ timeout: 30_000 });
    const headers = await editorText(HEADERS);
    expect(JSON.parse(headers)).toEqual({ Authorization: 'Bearer <token>', 'X-Tenant-Id': '<tenant>' });
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
});
