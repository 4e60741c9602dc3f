import { describe, expect, it } from 'vitest';
import { errorFromGraphQL } from '../../../rest-compat/graphql-errors.logic.js';
import { compilePath, matchPath } from '../../../rest-compat/path.logic.js';
import * as schema from '../../../rest-compat/schemas.js';
import { contentLanguage, coursesPage, localeHeaders, strongEtag, type CourseData } from '../../../rest-compat/shape.logic.js';
import { compileValidator } from '../../../rest-compat/validation.js';

const course = (id: string, locale = 'en'): CourseData => ({
  courseId: id,
  slug: id,
  title: { [locale]: 'T' },
  description: { [locale]: 'D' },
  defaultLocale: locale,
  visibility: 'org',
  authors: [],
  taxonomy: [],
  tags: [],
  cover: null,
  etag: '"e"',
  sourceDraftId: null,
  localizedTitle: { locale, text: 'T' },
  localizedDescription: { locale, text: 'D' },
});

describe('GraphQL errors on the REST door', () => {
  it('is 501 request.not_implemented when the graph lacks the route operation', () => {
    const error = errorFromGraphQL([
      { message: 'Cannot query field "x" on type "Mutation".', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } },
    ]);
    expect(error).toMatchObject({ code: 'request.not_implemented', status: 501 });
  });

  it('keeps the code, takes the status from extensions or the code, and keeps safe details', () => {
    expect(
      errorFromGraphQL([
        {
          message: 'stale',
          extensions: { code: 'request.precondition_failed', status: 412, etag: '"x"', serviceName: 'catalog' },
        },
      ]),
    ).toMatchObject({
      code: 'request.precondition_failed',
      status: 412,
      message: 'stale',
      details: { etag: '"x"' },
    });
    const mapped = errorFromGraphQL([{ message: 'bad', extensions: { code: 'authz.tenant_not_a_member' } }]);
    expect(mapped).toMatchObject({ code: 'authz.tenant_not_a_member', status: 403 });
    expect(mapped.details).toEqual({});
  });

  it('turns retryAfterSeconds into Retry-After', () => {
    const error = errorFromGraphQL([
      { message: 'slow down', extensions: { code: 'quota.exceeded', status: 429, retryAfterSeconds: 1.2 } },
    ]);
    expect(error.status).toBe(429);
    expect(error.headers).toEqual({ 'retry-after': '2' });
  });

  it('hides the text of server errors that did not come from our own errors', () => {
    const error = errorFromGraphQL([{ message: 'connect ECONNREFUSED 10.0.0.1:4001', extensions: { code: 'SOMETHING_ELSE' } }]);
    expect(error).toMatchObject({ code: 'INTERNAL_SERVER_ERROR', status: 500 });
    expect(error.message).not.toContain('ECONNREFUSED');
    expect(errorFromGraphQL([])).toMatchObject({ status: 500 });
  });
});

describe('path patterns', () => {
  it('matches one segment per parameter and nothing else', () => {
    const compiled = compilePath('/api/v1/courses/{courseId}');
    expect(matchPath(compiled, '/api/v1/courses/crs_1')).toEqual({ courseId: 'crs_1' });
    for (const path of [
      '/api/v1/courses',
      '/api/v1/courses/',
      '/api/v1/courses/a/b',
      '/api/v1/coursesX/a',
      '/api/v1/courses/a/',
    ]) {
      expect(matchPath(compiled, path), path).toBeUndefined();
    }
    expect(matchPath(compilePath('/v1/ai/health'), '/v1/ai/health')).toEqual({});
    expect(matchPath(compilePath('/a.b'), '/aXb')).toBeUndefined();
  });
});

describe('request schemas', () => {
  const assist = compileValidator(schema.assistBody, 'body');
  const valid = {
    featureKey: 'portal.triage',
    variables: { message: 'hi', __mock: { fail: true } },
    context: { facilityId: 'f', specialty: 's' },
  };

  it('accepts a valid assist request', () => {
    expect(assist(structuredClone(valid))).toEqual(valid);
  });

  it('names the failing path: unknown, missing and wrong fields', () => {
    const failure = (body: unknown) => {
      try {
        assist(body);
      } catch (error) {
        return error as { code: string; status: number; details: { path: string; location: string } };
      }
      throw new Error('expected a validation failure');
    };
    expect(failure({ ...valid, extra: 1 })).toMatchObject({
      code: 'request.validation_failed',
      status: 400,
      details: { path: '/extra', location: 'body' },
    });
    expect(failure({ ...valid, context: { facilityId: 'f' } }).details.path).toBe('/context/specialty');
    expect(failure({ ...valid, context: { ...valid.context, facilityId: 7 } }).details.path).toBe('/context/facilityId');
    expect(failure({ ...valid, mode: 'loud' }).details.path).toBe('/mode');
    expect(failure({ ...valid, variables: { 'bad name': 'x' } }).details.path).toBe('/variables/bad name');
    expect(failure([]).details.path).toBe('');
  });

  it('coerces query strings, and only query strings', () => {
    const query = compileValidator(schema.coursesQuery, 'query');
    const parsed = { limit: '25' } as Record<string, unknown>;
    query(parsed);
    expect(parsed.limit).toBe(25);
    for (const limit of ['0', '101', '2.5', 'ten', ''])
      expect(() => query({ limit }), limit).toThrow(expect.objectContaining({ code: 'request.validation_failed' }));
    expect(() => query({ page: '2' })).toThrow(expect.objectContaining({ details: expect.objectContaining({ path: '/page' }) }));
    const routing = compileValidator(schema.createRoutingRuleBody, 'body');
    expect(() => routing({ primary: { provider: 'mock', model: 'm' }, fallbacks: '[]' })).toThrow(
      expect.objectContaining({ code: 'request.validation_failed' }),
    );
  });

  it('keeps course metadata patches closed and non-empty', () => {
    const patch = compileValidator(schema.updateCourseMetadataBody, 'body');
    expect(() => patch({ tags: ['a'], cover: { assetId: 'med_01JD0000000000000000000000' } })).not.toThrow();
    expect(() => patch({})).toThrow();
    expect(() => patch({ title: { 'not a locale': 'x' } })).toThrow();
    expect(() => patch({ courseId: 'crs_01JD0000000000000000000000' })).toThrow();
    expect(() => patch({ authors: [{ userId: 'usr_x', role: 'author', displayName: 'A' }] })).toThrow();
  });
});

describe('response shaping', () => {
  it('sends stored quoted etags unchanged and quotes bare ones', () => {
    expect(strongEtag('"abc"')).toBe('"abc"');
    expect(strongEtag('abc')).toBe('"abc"');
  });

  it('lists the locales used, once each', () => {
    expect(contentLanguage([course('a', 'en'), course('b', 'fr'), course('c', 'en')])).toBe('en, fr');
    expect(contentLanguage([])).toBeUndefined();
  });

  it('names only valid language tags, so a stored CR/LF locale cannot break the header', () => {
    const evil = 'en\r\nX-Injected: 1';
    expect(contentLanguage([course('a', evil), course('b', 'de-CH'), course('c', 'not a tag')])).toBe('de-CH');
    expect(localeHeaders([course('a', evil)])).toEqual({ vary: 'Accept-Language' });
  });

  it('gives a next cursor only when there is a next page', () => {
    const edges = [{ cursor: 'c1', node: course('a') }];
    expect(coursesPage({ edges, pageInfo: { hasNextPage: true, endCursor: 'c1' } }).nextCursor).toBe('c1');
    expect(coursesPage({ edges, pageInfo: { hasNextPage: false, endCursor: 'c1' } })).toEqual({
      items: [course('a')],
      nextCursor: null,
    });
  });
});
