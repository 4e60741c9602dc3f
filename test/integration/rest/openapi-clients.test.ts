import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../../rest-compat/openapi.logic.js';
import { ROUTES } from '../../../rest-compat/route-table.js';

/**
 * The OpenAPI document as the tools client teams use read it (issue #26): Redocly's recommended
 * ruleset finds nothing, errors or warnings; and a client typed by openapi-typescript sends the
 * README's assist body as written, without a cast (`variables` was `Record<string, never>`).
 */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const document = openApiDocument(ROUTES);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-clients-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The JSON body of the README's `curl … /v1/ai/assist -d '…'`. */
function readmeAssistBody(): unknown {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const match = /curl -s localhost:4000\/v1\/ai\/assist[\s\S]*?-d '(\{[\s\S]*?\})'\n```/.exec(readme);
  if (!match) throw new Error('README: the assist example is not where this test looks for it');
  return JSON.parse(match[1]);
}

/** TypeScript's diagnostics for `source` against the types openapi-typescript generated. */
function typeErrors(source: string): string[] {
  const file = path.join(dir, `client-${Math.random().toString(36).slice(2)}.ts`);
  fs.writeFileSync(file, source);
  const program = ts.createProgram([file], { strict: true, noEmit: true, skipLibCheck: true, target: ts.ScriptTarget.ES2022 });
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('the OpenAPI document, read by client tools', () => {
  it("passes Redocly's recommended ruleset with no error and no warning", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: JSON.stringify(document), absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} (${p.location[0]?.pointer ?? ''})`)).toEqual([]);
  });

  it('types a client (openapi-typescript) that sends the README assist body without a cast', async () => {
    fs.writeFileSync(path.join(dir, 'api.ts'), astToString(await openapiTS(structuredClone(document) as never)));
    const assist = "paths['/v1/ai/assist']['post']['requestBody']";
    const body = JSON.stringify(readmeAssistBody());
    const client = (value: string) =>
      `import type { paths } from './api.js';\n` +
      `type AssistBody = NonNullable<${assist}>['content']['application/json'];\n` +
      `export const body: AssistBody = ${value};\n`;
    expect(typeErrors(client(body))).toEqual([]);
    // The check can fail: a body the route refuses does not type.
    expect(typeErrors(client(body.replace('"portal.triage"', '42'))).length).toBeGreaterThan(0);
  });
});
