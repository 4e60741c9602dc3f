import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every project file a module reaches through its static imports (type-only imports excluded). */
function reachable(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = fs.readFileSync(file, 'utf8');
    for (const match of source.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'(\.{1,2}\/[^']+)'/gm)) {
      const target = path.resolve(path.dirname(file), match[1]).replace(/\.js$/, '.ts');
      if (fs.existsSync(target)) visit(target);
    }
  };
  visit(path.join(ROOT, entry));
  return new Set([...seen].map((file) => path.relative(ROOT, file)));
}

describe('the gateway process', () => {
  it('loads no subgraph code: it serves the committed supergraph', () => {
    const files = [...reachable('processes/gateway.main.ts')];
    expect(files).toContain('gateway/gateway.ts');
    expect(files).toContain('rest-compat/rest-endpoints.ts');
    expect(files.filter((file) => file.startsWith('subgraphs/'))).toEqual([]);
  });

  it('has a gateway that never reaches back into REST-compat', () => {
    const files = [...reachable('gateway/gateway.ts')];
    expect(files.filter((file) => file.startsWith('rest-compat/'))).toEqual([]);
  });
});
