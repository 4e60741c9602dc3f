import { createHash } from 'node:crypto';

/**
 * Which statements run as named prepared statements, and under which name (pure; the database
 * hands `statementName` to Prisma's pg adapter, platform/db/prepared.ts marks the statements).
 * Only marked statements are named: Postgres keeps a prepared statement for the connection's life,
 * and texts that vary (an `IN` list of n ids) would pile up on every connection.
 */
const LABEL = /^[a-z][a-z0-9_]{0,40}$/;
const PREFIX = '/* prepared:';
const MARK = /^\/\* prepared:([a-z][a-z0-9_]{0,40}) \*\//;

/** The comment that marks a statement's text for preparing. */
export function preparedMark(label: string): string {
  if (!LABEL.test(label)) throw new Error(`a prepared statement's label is snake_case, at most 41 characters: ${label}`);
  return `${PREFIX}${label} */ `;
}

/** Names of the marked texts seen so far: bounded by the marked statements in the code, not by traffic. */
const names = new Map<string, string>();

/**
 * The statement name of a marked text (`<label>_<12 hex of its sha256>`), or undefined for an
 * unmarked one. pg refuses one name for two texts, so the name follows the text, not the label.
 */
export function statementName(text: string): string | undefined {
  // Every statement passes here; the unmarked ones (most) leave at the first characters.
  if (!text.startsWith(PREFIX)) return undefined;
  const known = names.get(text);
  if (known) return known;
  const mark = MARK.exec(text);
  if (!mark) return undefined;
  const name = `${mark[1]}_${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;
  names.set(text, name);
  return name;
}
