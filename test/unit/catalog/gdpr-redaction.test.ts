import { describe, expect, it } from 'vitest';
import { ERASED_USER_ID } from '../../../platform/ids.js';
import { redactAuthors, redactPayload, retentionPermitsZeroing } from '../../../subgraphs/catalog/gdpr/redaction.logic.js';

const ADA = 'usr_01HZX3K7Q8W9E2R4T6Y8V0A1BP';
const BOB = 'usr_01HZX3K7Q8W9E2R4T6Y8V0A1BQ';
const authors = [
  { userId: ADA, role: 'author', displayName: 'Ada Lovelace' },
  { userId: BOB, role: 'reviewer', displayName: 'Bob' },
];

describe('GDPR redaction of authors', () => {
  it('replaces the display name and keeps the user id for access and rectification', () => {
    const { authors: out, changed } = redactAuthors(authors, { userIds: new Set([ADA]), zeroIds: false });
    expect(changed).toBe(true);
    expect(out).toEqual([{ userId: ADA, role: 'author', displayName: '[redacted]' }, authors[1]]);
  });

  it('zeroes the user id on erasure where permitted', () => {
    const { authors: out } = redactAuthors(authors, { userIds: new Set([ADA]), zeroIds: true });
    expect(out[0]).toEqual({ userId: ERASED_USER_ID, role: 'author', displayName: '[redacted]' });
    expect(ERASED_USER_ID).toBe(`usr_${'0'.repeat(26)}`);
  });

  it('reports no change when the user is not an author or already redacted', () => {
    expect(redactAuthors(authors, { userIds: new Set(['usr_OTHER']), zeroIds: true }).changed).toBe(false);
    const once = redactAuthors(authors, { userIds: new Set([ADA]), zeroIds: false }).authors;
    expect(redactAuthors(once, { userIds: new Set([ADA]), zeroIds: false }).changed).toBe(false);
  });

  it('decides zeroing from the retention policy table', () => {
    expect(retentionPermitsZeroing('operational', ['operational'])).toBe(true);
    expect(retentionPermitsZeroing('legal_hold', ['operational'])).toBe(false);
  });

  it('redacts every author-shaped object of a stored event payload', () => {
    const payload = {
      courseId: 'crs_X',
      changedFields: ['authors'],
      previous: { authors: [authors[0]] },
      next: { authors },
      note: { userId: ADA },
    };
    const { payload: out, changed } = redactPayload(payload, { userIds: new Set([ADA]), zeroIds: true });
    expect(changed).toBe(true);
    expect(JSON.stringify(out)).not.toContain('Ada Lovelace');
    expect((out as typeof payload).next.authors[1]).toEqual(authors[1]);
    expect((out as typeof payload).previous.authors[0].userId).toBe(ERASED_USER_ID);
    // Objects that name the user without personal data stay as they are.
    expect((out as typeof payload).note).toEqual({ userId: ADA });
  });
});
