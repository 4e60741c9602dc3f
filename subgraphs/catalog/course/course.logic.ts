import { badInput } from '../../../platform/errors/errors.js';
import { isId } from '../../../platform/ids.js';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/**
 * Cursors are opaque to clients but are just the last course id seen, base64url-encoded with a
 * version tag: ids are ULIDs, so "id > cursor" pages by the primary-key index with no offset scan
 * and every row is returned exactly once even while new courses are inserted.
 */
export function encodeCursor(courseId: string): string {
  return Buffer.from(`c1:${courseId}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): string {
  let decoded = '';
  try {
    decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  } catch {
    // fall through to the error below
  }
  const id = decoded.startsWith('c1:') ? decoded.slice(3) : '';
  if (!isId('course', id)) throw badInput('The cursor is not valid', { code_detail: 'cursor.invalid', argument: 'after' });
  return id;
}

export function pageSize(first: number | null | undefined): number {
  if (first === null || first === undefined) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
    throw badInput(`first must be between 1 and ${MAX_PAGE_SIZE}`, { argument: 'first' });
  }
  return first;
}

export function requireCourseId(value: string, argument = 'courseId'): string {
  if (!isId('course', value)) throw badInput(`${argument} is not a course id (crs_ + 26 Crockford characters)`, { argument });
  return value;
}
