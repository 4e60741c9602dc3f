import { describe, expect, it } from 'vitest';
import { ERASED_USER_ID } from '../../../platform/ids.js';
import {
  erasureKey,
  redactAuthors,
  redactStoredCopy,
  retentionPermitsZeroing,
  withoutErasedId,
} from '../../../subgraphs/catalog/gdpr/redaction.logic.js';

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

  it('redacts every author-shaped object of a stored event and, on erasure, every copy of the id', () => {
    const envelope = {
      eventId: '01HZX3K7Q8W9E2R4T6Y8V0A1BR',
      actor: { type: 'user', id: ADA },
      payload: {
        courseId: 'crs_X',
        changedFields: ['authors'],
        previous: { authors: [authors[0]] },
        next: { authors },
        publishedBy: ADA,
        note: { userId: ADA },
        [ADA]: 'a key is never rewritten',
      },
    };
    const { value, changed } = redactStoredCopy(envelope, { userIds: new Set([ADA]), zeroIds: true });
    const out = value as typeof envelope;
    expect(changed).toBe(true);
    expect(JSON.stringify(out)).not.toContain('Ada Lovelace');
    expect(out.payload.next.authors[1]).toEqual(authors[1]);
    expect(out.payload.previous.authors[0]).toEqual({ userId: ERASED_USER_ID, role: 'author', displayName: '[redacted]' });
    expect(out.payload.publishedBy).toBe(ERASED_USER_ID);
    expect(out.actor).toEqual({ type: 'user', id: ERASED_USER_ID });
    expect(out.payload.note).toEqual({ userId: ERASED_USER_ID });
    expect(Object.keys(out.payload)).toContain(ADA);
  });

  it('keeps ids on access and rectification, and reports no change once redacted', () => {
    const envelope = { actor: { type: 'user', id: ADA }, payload: { authors, publishedBy: ADA } };
    const rule = { userIds: new Set([ADA]), zeroIds: false };
    const once = redactStoredCopy(envelope, rule);
    expect(once.changed).toBe(true);
    expect(once.value).toEqual({
      actor: { type: 'user', id: ADA },
      payload: { authors: [{ ...authors[0], displayName: '[redacted]' }, authors[1]], publishedBy: ADA },
    });
    expect(redactStoredCopy(once.value, rule).changed).toBe(false);
    expect(redactStoredCopy(envelope, { userIds: new Set([BOB]), zeroIds: true }).value).toEqual({
      actor: { type: 'user', id: ADA },
      payload: { authors: [authors[0], { ...authors[1], userId: ERASED_USER_ID, displayName: '[redacted]' }], publishedBy: ADA },
    });
  });

  it('keeps a user arriving after the erasure as the erased id only where zeroing is permitted', () => {
    const erased = new Set([ADA]);
    expect(withoutErasedId(ADA, erased, true)).toBe(ERASED_USER_ID);
    expect(withoutErasedId(ADA, erased, false)).toBe(ADA);
    expect(withoutErasedId(BOB, erased, true)).toBe(BOB);
    expect(withoutErasedId(ADA, undefined, true)).toBe(ADA);
  });

  it('names the erased user in the erasure record by a digest, never the id', () => {
    expect(erasureKey(ADA)).toMatch(/^[0-9a-f]{64}$/);
    expect(erasureKey(ADA)).not.toContain(ADA);
    expect(erasureKey(ADA)).toBe(erasureKey(`${ADA}`));
    expect(erasureKey(ADA)).not.toBe(erasureKey(BOB));
  });
});
