// `npx tsx bench/profile.ts <file.cpuprofile> [top]`: where a `node --cpu-prof` profile spent its
// time — self time by package (node_modules/<pkg>, our folders, node internals) and by function,
// plus inclusive time of our own functions. The evidence bench/README.md quotes for a miss.
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export function packageOf(url: string): string {
  if (!url) return '(native/idle)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return 'node internals';
  const local =
    /\/work\/[^/]+\/([^/]+)\//.exec(url) ??
    /file:\/\/.*?\/(platform|gateway|subgraphs|events|rest-compat|prisma|bench)\//.exec(url);
  return local ? `ours: ${local[1]}/` : url.split('/').slice(-2).join('/');
}

export interface ProfileSummary {
  totalMs: number;
  byPackage: Array<[string, number]>;
  byFunction: Array<[string, number]>;
  /** Time spent in a package's functions and everything they called (each sample counted once per package). */
  inclusiveByPackage: Array<[string, number]>;
}

export function summarize(file: string, top = 15): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  for (const [id, micros] of self) {
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)' || functionName === '(program)' || functionName === '(garbage collector)') {
      byPackage.set(functionName, (byPackage.get(functionName) ?? 0) + micros);
      total += micros;
      continue;
    }
    total += micros;
    const pkg = packageOf(url);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + micros);
    const fn = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + micros);
  }
  // Inclusive: walk each sampled stack once, crediting every package on it once.
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const inclusive = new Map<string, number>();
  for (const [id, micros] of self) {
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!.callFrame;
      if (!frame.url) continue;
      const pkg = packageOf(frame.url);
      if (seen.has(pkg)) continue;
      seen.add(pkg);
      inclusive.set(pkg, (inclusive.get(pkg) ?? 0) + micros);
    }
  }
  const sorted = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => [k, v / 1000] as [string, number]);
  return {
    totalMs: total / 1000,
    byPackage: sorted(byPackage),
    byFunction: sorted(byFunction),
    inclusiveByPackage: sorted(inclusive),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    console.error('usage: npx tsx bench/profile.ts <file.cpuprofile> [top]');
    process.exit(2);
  }
  const summary = summarize(file, Number(top ?? 15));
  const busy = summary.totalMs - (summary.byPackage.find(([k]) => k === '(idle)')?.[1] ?? 0);
  const pct = (ms: number) => `${((100 * ms) / summary.totalMs).toFixed(1)} %`;
  console.log(`${file}: ${summary.totalMs.toFixed(0)} ms sampled, ${busy.toFixed(0)} ms not idle\n`);
  console.log('| self time by package | ms | share |\n|---|---:|---:|');
  for (const [k, v] of summary.byPackage) console.log(`| ${k} | ${v.toFixed(0)} | ${pct(v)} |`);
  console.log('\n| inclusive time by package | ms | share |\n|---|---:|---:|');
  for (const [k, v] of summary.inclusiveByPackage) console.log(`| ${k} | ${v.toFixed(0)} | ${pct(v)} |`);
  console.log('\n| self time by function | ms | share |\n|---|---:|---:|');
  for (const [k, v] of summary.byFunction) console.log(`| ${k} | ${v.toFixed(0)} | ${pct(v)} |`);
}
