import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../../platform/errors/error-codes.js';
import { AppError, statusForCode } from '../../../platform/errors/errors.js';
import { routeErrors } from '../../../rest-compat/openapi.logic.js';
import { ROUTES } from '../../../rest-compat/route-table.js';
import { codeSites, codesIn, ROOT, sourceFiles } from '../../support/error-code-sites.js';

/**
 * The registry (platform/errors/error-codes.ts) is the list of every code the service can emit: client
 * teams code against it, the docs are generated from it and the changelog guard compares it.
 * A code thrown but not registered would be an undocumented, unguarded contract.
 */
const registered = new Set(Object.keys(ERROR_CODES));
const sites = codeSites();

function byCode(list: ReadonlyArray<{ file: string; code: string }>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const { file, code } of list) out[code] = [...new Set([...(out[code] ?? []), file])];
  return out;
}

/** The text of each `new AppError(…)` call, from its opening parenthesis to the matching one. */
function appErrorCalls(source: string): string[] {
  const calls: string[] = [];
  for (const match of source.matchAll(/new AppError\(/g)) {
    let depth = 0;
    let quote: string | undefined;
    for (let i = match.index + 'new AppError'.length; i < source.length; i++) {
      const char = source[i];
      if (quote) {
        if (char === '\\') i++;
        else if (char === quote) quote = undefined;
      } else if (char === "'" || char === '"' || char === '`') quote = char;
      else if (char === '(') depth++;
      else if (char === ')' && --depth === 0) {
        calls.push(source.slice(match.index, i + 1));
        break;
      }
    }
  }
  return calls;
}

describe('the error-code registry', () => {
  it('finds the codes where the source gives them (the scan still matches)', () => {
    const found = new Set(sites.map(({ code }) => code));
    // One of each kind of site: a thrown AppError, a forbidden(), a code table, an extensions code, a compared code.
    for (const code of [
      'lifecycle.illegal_transition',
      'routing.global_rule_forbidden',
      'query.too_deep',
      'INTERNAL_SERVER_ERROR',
    ]) {
      expect(found).toContain(code);
    }
    expect(found).toContain('GRAPHQL_VALIDATION_FAILED');
  });

  it('holds every code the source throws, gives or compares', () => {
    const missing = byCode(sites.filter(({ code }) => !registered.has(code)));
    expect(missing, 'add these codes (status + one-line meaning) to platform/errors/error-codes.ts').toEqual({});
  });

  it('holds every code the REST route table documents', () => {
    const documented = ROUTES.flatMap((route) =>
      Object.values(routeErrors(route))
        .flat()
        .map((code) => ({ file: route.id, code })),
    );
    expect(byCode(documented.filter(({ code }) => !registered.has(code)))).toEqual({});
  });

  it('holds no code that nothing emits any more', () => {
    const found = new Set(sites.map(({ code }) => code));
    const stale = [...registered].filter((code) => !found.has(code));
    expect(stale, 'remove these from platform/errors/error-codes.ts (and say so in CHANGELOG.md) or emit them').toEqual([]);
  });

  it('gives each code the status an AppError that names a status for it answers', () => {
    const disagreeing: string[] = [];
    for (const file of sourceFiles()) {
      for (const call of appErrorCalls(fs.readFileSync(path.join(ROOT, file), 'utf8'))) {
        const code = /^new AppError\(\s*'([^']+)'/.exec(call)?.[1];
        const status = /\bstatus: (\d{3})\b/.exec(call)?.[1];
        if (code && status && ERROR_CODES[code as keyof typeof ERROR_CODES]?.status !== Number(status)) {
          disagreeing.push(`${file}: ${code} thrown with ${status}`);
        }
      }
    }
    expect(disagreeing).toEqual([]);
  });

  it('is where AppError takes a status from when none is given', () => {
    expect(new AppError('review.not_open', 'x').status).toBe(409);
    expect(new AppError('quota.exceeded', 'x').status).toBe(429);
    expect(statusForCode('request.precondition_required')).toBe(428);
    expect(statusForCode('no.such_code')).toBe(500);
  });

  it('has a status and a one-line meaning for each code', () => {
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      expect(entry.status, code).toBeGreaterThanOrEqual(200);
      expect(entry.status, code).toBeLessThan(600);
      expect(entry.meaning, code).toMatch(/^\S.*\S$/);
      expect(entry.meaning, code).not.toContain('\n');
      expect(entry.meaning, code).not.toContain('|');
    }
  });

  it('the scan reports a code that is not registered', () => {
    const planted = codesIn('subgraphs/example.ts', "throw new AppError(\n  'planted.new_code',\n  'message',\n);");
    expect(planted).toEqual([{ file: 'subgraphs/example.ts', code: 'planted.new_code' }]);
    expect(registered.has('planted.new_code')).toBe(false);
    // A log line's own code is for operators, not a client contract.
    expect(codesIn('x.ts', "logger.error({ code: 'idempotency.effect_unrecorded' }, 'm')")).toEqual([]);
  });
});
