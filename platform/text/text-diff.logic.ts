/**
 * A line diff of two texts and what can be read back from one: the texts again, and its size.
 * Generic (nothing of review in it); the AI review stores a reviewer's edit as one of these.
 */

export type DiffOp = { op: '=' | '-' | '+'; text: string };

/** Above this many lines on either side the diff is one block replaced (the LCS table is quadratic). */
const MAX_DIFF_LINES = 2_000;

/**
 * A line diff (longest common subsequence), like `diff` without context trimming: every line of
 * the original and of the edit appears once, marked kept, removed or added. Runs of the same op
 * are merged so the stored diff stays small.
 */
export function lineDiff(original: string, edited: string): DiffOp[] {
  const a = original.split('\n');
  const b = edited.split('\n');
  const ops: DiffOp[] = [];
  const push = (op: DiffOp['op'], line: string) => {
    const last = ops.at(-1);
    if (last && last.op === op) last.text += `\n${line}`;
    else ops.push({ op, text: line });
  };
  if (a.length > MAX_DIFF_LINES || b.length > MAX_DIFF_LINES) {
    for (const line of a) push('-', line);
    for (const line of b) push('+', line);
    return ops;
  }
  // lcs[i][j] = length of the LCS of a[i..] and b[j..]
  const lcs: Uint32Array[] = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      push('=', a[i]);
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) push('-', a[i++]);
    else push('+', b[j++]);
  }
  while (i < a.length) push('-', a[i++]);
  while (j < b.length) push('+', b[j++]);
  return ops;
}

/** Applies a diff to its original: the edited text again (the diff's own proof in tests). */
export function applyDiff(ops: DiffOp[]): { original: string; edited: string } {
  const original: string[] = [];
  const edited: string[] = [];
  for (const { op, text } of ops) {
    if (op !== '+') original.push(text);
    if (op !== '-') edited.push(text);
  }
  return { original: original.join('\n'), edited: edited.join('\n') };
}

/** What stays of a diff after the review text's retention: its size, not its text. */
export function diffSummary(ops: DiffOp[]): { linesRemoved: number; linesAdded: number } {
  const lines = (op: DiffOp['op']) => ops.filter((o) => o.op === op).reduce((n, o) => n + o.text.split('\n').length, 0);
  return { linesRemoved: lines('-'), linesAdded: lines('+') };
}
