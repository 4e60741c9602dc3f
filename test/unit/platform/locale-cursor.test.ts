import { describe, expect, it } from 'vitest';
import { bestLocale, parseAcceptLanguage, resolveLocaleMap } from '../../../platform/text/locale.logic.js';
import { continueTrace, parseTraceparent } from '../../../platform/observability/trace-context.js';
import { decodeCursor, encodeCursor, pageSize } from '../../../subgraphs/catalog/course/course.logic.js';
import { newId } from '../../../platform/ids.js';

describe('Accept-Language', () => {
  it('orders tags by quality and drops malformed ones', () => {
    expect(parseAcceptLanguage('fr-CH, fr;q=0.9, en;q=0.8, *;q=0.5, <script>;q=1')).toEqual(['fr-CH', 'fr', 'en']);
    expect(parseAcceptLanguage(undefined)).toEqual([]);
  });

  it('resolves exact, then same language, then the default locale', () => {
    expect(bestLocale(['en', 'fr-FR'], ['fr-FR'], 'en')).toBe('fr-FR');
    expect(bestLocale(['en', 'fr-FR'], ['fr-CA'], 'en')).toBe('fr-FR');
    expect(bestLocale(['en', 'de'], ['ja'], 'de')).toBe('de');
    expect(resolveLocaleMap({ en: 'Hello', de: 'Hallo' }, [], 'de')).toEqual({ locale: 'de', text: 'Hallo' });
  });
});

describe('course cursors', () => {
  it('round-trips and rejects anything else as BAD_USER_INPUT', () => {
    const id = newId('course');
    expect(decodeCursor(encodeCursor(id))).toBe(id);
    for (const bad of [
      '',
      'abc',
      Buffer.from('c1:crs_nope').toString('base64url'),
      Buffer.from(`c2:${id}`).toString('base64url'),
    ]) {
      expect(() => decodeCursor(bad)).toThrow(expect.objectContaining({ code: 'BAD_USER_INPUT' }));
    }
  });

  it('bounds the page size', () => {
    expect(pageSize(undefined)).toBe(20);
    expect(pageSize(100)).toBe(100);
    expect(() => pageSize(0)).toThrow(expect.objectContaining({ code: 'BAD_USER_INPUT' }));
    expect(() => pageSize(101)).toThrow(expect.objectContaining({ code: 'BAD_USER_INPUT' }));
  });
});

describe('traceparent', () => {
  it('continues a valid trace and starts a new one for a missing or malformed header', () => {
    const incoming = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const continued = continueTrace(incoming);
    expect(continued).toMatchObject({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', started: false });
    expect(parseTraceparent(continued.traceparent)?.parentId).not.toBe('00f067aa0ba902b7');
    for (const bad of [
      undefined,
      'garbage',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    ]) {
      const fresh = continueTrace(bad);
      expect(fresh.started).toBe(true);
      expect(parseTraceparent(fresh.traceparent)).toBeDefined();
    }
  });
});
