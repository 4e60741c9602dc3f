import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The AI subgraph's house rules, read from its source: no import circle (type imports count: a
 * circle of types is still two modules that cannot be read one without the other), no function a
 * reader has to scroll through, time only from the injected clock, and pure `*.logic.ts` modules.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const AI = path.join(ROOT, 'subgraphs/ai');
const MAX_FUNCTION_LINES = 120;

/** Reads the system clock on purpose: the AWS SDK judges credential expiry against it. */
const SYSTEM_TIME_ALLOWED = new Set(['providers/bedrock.ts']);

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

const files = new Map(
  sourceFiles(AI).map((file) => [
    file,
    ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, /* setParentNodes */ true),
  ]),
);
const relative = (file: string) => path.relative(AI, file);

/** Relative module specifiers of every import and re-export, `import type` included. */
function specifiers(source: ts.SourceFile): string[] {
  return source.statements.flatMap((statement) =>
    (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) &&
    statement.moduleSpecifier &&
    ts.isStringLiteral(statement.moduleSpecifier)
      ? [statement.moduleSpecifier.text]
      : [],
  );
}

function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [file, source] of files) {
    const targets = specifiers(source)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts')))
      .filter((target) => files.has(target));
    graph.set(file, targets);
  }
  return graph;
}

/** Strongly connected components of more than one module (Tarjan), each a circle of imports. */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(relative(member));
    } while (member !== node);
    if (component.length > 1) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

function functionLengths(source: ts.SourceFile): Array<{ name: string; lines: number }> {
  const found: Array<{ name: string; lines: number }> = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const name = node.name && ts.isIdentifier(node.name) ? node.name.text : '(anonymous)';
      found.push({ name: `${relative(source.fileName)}:${start + 1} ${name}`, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** `new Date()` without arguments and `Date.now()`: readings of the system clock. */
function systemTimeReadings(source: ts.SourceFile): string[] {
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    const isNow =
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      node.expression.expression.getText(source) === 'Date' &&
      node.expression.name.text === 'now';
    const isNewDate =
      ts.isNewExpression(node) && node.expression.getText(source) === 'Date' && (node.arguments?.length ?? 0) === 0;
    if (isNow || isNewDate) {
      found.push(`${relative(source.fileName)}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Files that call a function or method named `name`, with the enclosing function's name. */
function callSites(name: string): string[] {
  const found: string[] = [];
  for (const source of files.values()) {
    const visit = (node: ts.Node, within: string) => {
      let scope = within;
      if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name) scope = node.name.getText(source);
      if (ts.isCallExpression(node)) {
        const callee = node.expression;
        const called = ts.isPropertyAccessExpression(callee) ? callee.name.text : callee.getText(source);
        if (called === name) found.push(`${relative(source.fileName)}:${scope}`);
      }
      ts.forEachChild(node, (child) => visit(child, scope));
    };
    visit(source, '');
  }
  return found.sort();
}

/** Modules a pure `*.logic.ts` may not import: I/O, Prisma, GraphQL, NATS, clocks, or our repositories and services. */
const IMPURE_IMPORT =
  /(^@prisma\/|prisma\/generated|^graphql$|^type-graphql$|^@nats-io\/|^ioredis$|^node:|clock\.js$|\.(repo|service|admin|resolver|redis)\.js$)/;

describe('AI subgraph house rules', () => {
  it('has no import circle, type imports included', () => {
    expect(circles(importGraph())).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    const long = [...files.values()].flatMap(functionLengths).filter((f) => f.lines > MAX_FUNCTION_LINES);
    expect(long).toEqual([]);
  });

  it('reads time only from the injected clock', () => {
    const readings = [...files.values()]
      .filter((source) => !SYSTEM_TIME_ALLOWED.has(relative(source.fileName)))
      .flatMap(systemTimeReadings);
    expect(readings).toEqual([]);
  });

  it('keeps *.logic.ts pure: no I/O, Prisma, GraphQL, NATS or clock imports, no system time', () => {
    const logic = [...files.values()].filter((source) => source.fileName.endsWith('.logic.ts'));
    expect(logic.length).toBeGreaterThan(10);
    const impure = logic.flatMap((source) =>
      specifiers(source)
        .filter((spec) => IMPURE_IMPORT.test(spec))
        .map((spec) => `${relative(source.fileName)} imports ${spec}`),
    );
    expect([...impure, ...logic.flatMap(systemTimeReadings)]).toEqual([]);
  });

  it('calls model providers only along the route decision (residency by construction)', () => {
    // decideRoute is the one place that says where a request may go; route() keeps its targets on
    // the draft, and callProviders hands exactly those to the call engine, the only caller of an
    // adapter (metrics.ts wraps adapters to time them). A new path to a provider must come through here.
    expect(callSites('decideRoute')).toEqual(['assist/assist.stages.ts:route']);
    expect(callSites('callWithFallbacks')).toEqual(['assist/assist.stages.ts:callProviders']);
    expect(callSites('complete')).toEqual(['metrics.ts:observeProvider', 'providers/call-engine.ts:callWithFallbacks']);
  });

  it('sees what it checks: a circle, a long function and a clock reading in sample code are found', () => {
    const sample = ts.createSourceFile(
      path.join(AI, 'sample.ts'),
      `export function long() {\n${'  void 0;\n'.repeat(MAX_FUNCTION_LINES)}}\nexport const at = () => Date.now() + new Date().getTime();`,
      ts.ScriptTarget.Latest,
      true,
    );
    expect(functionLengths(sample).filter((f) => f.lines > MAX_FUNCTION_LINES)).toHaveLength(1);
    expect(systemTimeReadings(sample)).toHaveLength(2);
    const a = path.join(AI, 'a.ts');
    const b = path.join(AI, 'b.ts');
    expect(
      circles(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts']]);
  });
});
