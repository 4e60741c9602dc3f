import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { floorsOf } from '../../eslint.config.js';

/**
 * The design's rules of the house are kept by the linter (eslint.config.js), so `npm run check`
 * and CI fail on a violation. These cases prove each rule catches one: a rule that silently
 * stopped matching would otherwise let the house decay unnoticed.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: ROOT, ignore: false });

async function rulesBroken(file: string, source?: string): Promise<string[]> {
  const filePath = path.join(ROOT, file);
  const [result] = source === undefined ? await eslint.lintFiles([filePath]) : await eslint.lintText(source, { filePath });
  return result.messages.map((message) => message.ruleId ?? message.message);
}

describe('the lint rules that keep the house', () => {
  it('keep the ground floor from importing anything of ours', async () => {
    const broken = await rulesBroken(
      'platform/example.ts',
      "import { startCatalogSubgraph } from '../subgraphs/catalog/server.js';\nexport const x = startCatalogSubgraph;\n",
    );
    expect(broken).toContain('import-x/no-restricted-paths');
  });

  it('keep the catalog and the AI subgraph apart, and the gateway free of subgraph code', async () => {
    expect(
      await rulesBroken(
        'subgraphs/catalog/example.ts',
        "import { startAiSubgraph } from '../ai/server.js';\nexport const x = startAiSubgraph;\n",
      ),
    ).toContain('import-x/no-restricted-paths');
    expect(
      await rulesBroken(
        'gateway/example.ts',
        "import { restEndpoints } from '../rest-compat/rest-endpoints.js';\nexport const x = restEndpoints;\n",
      ),
    ).toContain('import-x/no-restricted-paths');
  });

  it('let REST-compat reach the gateway through its execute port only', async () => {
    const port = "import type { ExecuteOperation } from '../gateway/execute-port.js';\nexport type X = ExecuteOperation;\n";
    expect(await rulesBroken('rest-compat/example.ts', port)).toEqual([]);
    const internals = "import { startGateway } from '../gateway/gateway.js';\nexport const x = startGateway;\n";
    expect(await rulesBroken('rest-compat/example.ts', internals)).toContain('import-x/no-restricted-paths');
  });

  it('keep *.logic.ts pure: no I/O modules, no clock, no randomness', async () => {
    expect(await rulesBroken('events/example.logic.ts', "import pg from 'pg';\nexport const x = pg;\n")).toContain(
      '@typescript-eslint/no-restricted-imports',
    );
    expect(await rulesBroken('events/example.logic.ts', 'export const stamp = () => Date.now();\n')).toContain(
      'no-restricted-syntax',
    );
    expect(await rulesBroken('events/example.logic.ts', 'export const stamp = () => new Date();\n')).toContain(
      'no-restricted-syntax',
    );
    expect(await rulesBroken('events/example.logic.ts', 'export const at = (iso: string) => new Date(iso);\n')).toEqual([]);
  });

  it('forbid writing process.env in product code', async () => {
    for (const write of ["process.env.A = 'x';", "process.env.A ??= 'x';", "process.env['A'] = 'x';", 'delete process.env.A;']) {
      expect(await rulesBroken('gateway/example.ts', `${write}\nexport {};\n`), write).toContain('no-restricted-syntax');
    }
    expect(await rulesBroken('gateway/example.ts', 'export const a = process.env.A;\n')).toEqual([]);
    expect(await rulesBroken('test/example.ts', "process.env.A = 'x';\nexport {};\n")).toEqual([]);
  });

  it('keep the folders of events/ in floors: the ledger below ordering, ordering below consume', async () => {
    const up = "import { startConsumer } from '../consume/consumer-runner.js';\nexport const x = startConsumer;\n";
    expect(await rulesBroken('events/ordering/example.ts', up)).toContain('import-x/no-restricted-paths');
    expect(await rulesBroken('events/ledger/example.ts', up)).toContain('import-x/no-restricted-paths');
    expect(await rulesBroken('events/dead-letters/example.ts', up)).toContain('import-x/no-restricted-paths');
    const down = "import { recordInbox } from '../ledger/inbox.js';\nexport const x = recordInbox;\n";
    expect(await rulesBroken('events/ordering/example.ts', down)).toEqual([]);
  });

  it('keep the rooms of gateway/ side by side: none reaches into another', async () => {
    const cache = "import { ResponseCache } from '../response-cache/response-cache.js';\nexport const x = ResponseCache;\n";
    expect(await rulesBroken('gateway/subgraph-calls/example.ts', cache)).toContain('import-x/no-restricted-paths');
    const calls = "import { attemptFetch } from '../subgraph-calls/subgraph-fetch.js';\nexport const x = attemptFetch;\n";
    expect(await rulesBroken('gateway/response-cache/example.ts', calls)).toContain('import-x/no-restricted-paths');
    const context = "import type { GatewayContext } from '../forwarding.js';\nexport type X = GatewayContext;\n";
    expect(await rulesBroken('gateway/subgraph-calls/example.ts', context)).toEqual([]);
  });

  it('keep the rooms of platform/ in floors: configuration at the ground, the doors on top', async () => {
    const logger = "import { createLogger } from '../observability/logger.js';\nexport const x = createLogger;\n";
    expect(await rulesBroken('platform/config/example.ts', logger)).toContain('import-x/no-restricted-paths');
    const parts = "import { PartStack } from '../lifecycle/parts.js';\nexport const x = PartStack;\n";
    expect(await rulesBroken('platform/observability/example.ts', parts)).toContain('import-x/no-restricted-paths');
    expect(await rulesBroken('platform/db/example.ts', parts)).toContain('import-x/no-restricted-paths');
    const errors = "import { AppError } from '../errors/errors.js';\nexport const x = AppError;\n";
    expect(await rulesBroken('platform/db/example.ts', errors)).toContain('import-x/no-restricted-paths');
    expect(await rulesBroken('platform/graphql/example.ts', errors)).toEqual([]);
    const ids = "import { newUlid } from '../ids.js';\nexport const x = newUlid;\n";
    expect(await rulesBroken('platform/text/example.ts', ids)).toEqual([]);
  });

  it('refuse a table of events/ folders with a loop in it', () => {
    expect(floorsOf({ a: [], b: ['a'], c: ['b'] })).toEqual(['a', 'b', 'c']);
    expect(() => floorsOf({ a: ['b'], b: ['c'], c: ['a'] })).toThrow('a -> b -> c -> a');
  });

  it('forbid import circles', async () => {
    expect(await rulesBroken('test/fixtures/lint/cycle/a.ts')).toContain('import-x/no-cycle');
  });
});
