import { describe, expect, it } from 'vitest';
import { newUlid } from '../../../platform/ids.js';
import { graphqlKeyedWrite, isStorableGraphQLResponse } from '../../../platform/idempotency/graphql-mutations.js';

const mutationRoute = (body: unknown) => graphqlKeyedWrite(body, 4_000)?.route;
import {
  classifyExisting,
  retryAfterSeconds,
  isStorableStatus,
  parseIdempotencyKey,
  replayableHeaders,
  requestFingerprint,
  scopedKey,
  callerKeyPrefix,
  tenantKeyPrefix,
} from '../../../platform/idempotency/idempotency.logic.js';

describe('Idempotency-Key syntax', () => {
  const ulid = newUlid();

  it('accepts the bare ULID and the quoted structured-field form, case-insensitively', () => {
    expect(parseIdempotencyKey(ulid)).toBe(ulid);
    expect(parseIdempotencyKey(`"${ulid}"`)).toBe(ulid);
    expect(parseIdempotencyKey(`  ${ulid.toLowerCase()} `)).toBe(ulid);
  });

  it('is idempotency.key_required when absent or empty', () => {
    for (const raw of [undefined, '', '   ', '""']) {
      expect(() => parseIdempotencyKey(raw)).toThrow(expect.objectContaining({ code: 'idempotency.key_required', status: 400 }));
    }
  });

  it('is idempotency.key_invalid for anything that is not a ULID', () => {
    const invalid = [
      'abc',
      `${ulid}0`,
      ulid.slice(1),
      `8${ulid.slice(1)}`, // beyond the 48-bit timestamp
      `${ulid.slice(0, 25)}U`, // U is not Crockford
      `"${ulid}";p=1`,
      `"${ulid}`,
      `'${ulid}'`,
      '123e4567-e89b-12d3-a456-426614174000',
    ];
    for (const raw of invalid) {
      expect(() => parseIdempotencyKey(raw), raw).toThrow(
        expect.objectContaining({ code: 'idempotency.key_invalid', status: 400 }),
      );
    }
  });
});

describe('key scope and request fingerprint', () => {
  const scope = { tenantId: 'ten_01JD0000000000000000000000', subject: 'svc|a b', route: 'rest:ai.assist' };

  it('scopes keys by tenant, caller and route, tenant first', () => {
    const key = scopedKey(scope, 'K');
    expect(key.startsWith(`${scope.tenantId}|`)).toBe(true);
    const others = [
      scopedKey({ ...scope, tenantId: 'ten_01JD0000000000000000000001' }, 'K'),
      scopedKey({ ...scope, subject: 'svc|b' }, 'K'),
      scopedKey({ ...scope, route: 'rest:other' }, 'K'),
      // A separator inside the subject cannot make two scopes collide.
      scopedKey({ ...scope, subject: 'svc', route: 'a b|rest:ai.assist' }, 'K'),
    ];
    expect(new Set([key, ...others]).size).toBe(5);
  });

  it("finds a caller's keys by prefix, and no other caller's (a GDPR erasure deletes them)", () => {
    const key = scopedKey(scope, 'K');
    expect(key.startsWith(callerKeyPrefix(scope.tenantId, scope.subject))).toBe(true);
    expect(key.startsWith(tenantKeyPrefix(scope.tenantId))).toBe(true);
    // A caller whose id starts with the subject's, or the same caller in another tenant, is not matched.
    expect(
      scopedKey({ ...scope, subject: `${scope.subject}x` }, 'K').startsWith(callerKeyPrefix(scope.tenantId, scope.subject)),
    ).toBe(false);
    expect(scopedKey(scope, 'K').startsWith(callerKeyPrefix('ten_01JD0000000000000000000001', scope.subject))).toBe(false);
  });

  it('treats bodies equal up to member order and spacing as the same request', () => {
    const a = requestFingerprint('post', '/v1/ai/assist', JSON.parse('{"a":1,"b":{"c":[1,2],"d":"x"}}'));
    const b = requestFingerprint('POST', '/v1/ai/assist', JSON.parse('{ "b": { "d": "x", "c": [1, 2] }, "a": 1 }'));
    expect(a).toBe(b);
    expect(requestFingerprint('POST', '/v1/ai/assist', { a: 2 })).not.toBe(requestFingerprint('POST', '/v1/ai/assist', { a: 1 }));
    expect(requestFingerprint('PATCH', '/x', { a: 1 })).not.toBe(requestFingerprint('POST', '/x', { a: 1 }));
    expect(requestFingerprint('POST', '/x', { a: 1 })).not.toBe(requestFingerprint('POST', '/y', { a: 1 }));
  });
});

describe('what is stored and replayed', () => {
  it('keeps outcomes of requests that ran, frees the key on refusals and server errors', () => {
    for (const status of [200, 201, 202, 404, 409, 412, 422]) expect(isStorableStatus(status), String(status)).toBe(true);
    for (const status of [400, 401, 403, 413, 415, 428, 429, 500, 501, 502, 503])
      expect(isStorableStatus(status), String(status)).toBe(false);
  });

  it('classifies a live record: another request first, then in flight, then replay', () => {
    const response = { status: 201, headers: {}, body: '{}' };
    const expiresAt = 10_000;
    expect(classifyExisting({ fingerprint: 'a', state: 'in_flight', expiresAt }, 'b', 0)).toEqual({ kind: 'mismatch' });
    expect(classifyExisting({ fingerprint: 'a', state: 'completed', response, expiresAt }, 'b', 0)).toEqual({ kind: 'mismatch' });
    expect(classifyExisting({ fingerprint: 'a', state: 'in_flight', expiresAt }, 'a', 3_500)).toEqual({
      kind: 'in_flight',
      retryAfterMs: 6_500,
    });
    expect(classifyExisting({ fingerprint: 'a', state: 'completed', response, expiresAt }, 'a', 0)).toEqual({
      kind: 'replay',
      response,
    });
  });

  it('asks a retry to wait what is left of the lease, in whole seconds, at least one', () => {
    expect(retryAfterSeconds(6_500)).toBe(7);
    expect(retryAfterSeconds(5_000)).toBe(5);
    expect(retryAfterSeconds(0)).toBe(1);
  });

  it('never replays per-request headers', () => {
    expect(
      replayableHeaders({
        'Content-Type': 'application/json',
        ETag: '"1"',
        traceparent: 't',
        'x-request-id': 'r',
        'Content-Length': '2',
      }),
    ).toEqual({
      'content-type': 'application/json',
      etag: '"1"',
    });
  });
});

describe('GraphQL door', () => {
  it('recognises the selected operation as a mutation', () => {
    expect(mutationRoute({ query: 'mutation Create { a }' })).toBe('graphql:Create');
    expect(mutationRoute({ query: 'query Q { a } mutation M { b }', operationName: 'M' })).toBe('graphql:M');
    expect(mutationRoute({ query: 'query Q { a } mutation M { b }', operationName: 'Q' })).toBeUndefined();
    expect(mutationRoute({ query: '{ a }' })).toBeUndefined();
    expect(mutationRoute({ query: 'mutation { a }' })).toMatch(/^graphql:#[0-9a-f]{64}$/);
    expect(mutationRoute({ query: 'mutation {' })).toBeUndefined();
    expect(mutationRoute(undefined)).toBeUndefined();
    expect(mutationRoute([{ query: 'mutation { a }' }])).toBeUndefined();
  });

  it('stores a mutation that produced data or a storable error, not a refusal', () => {
    const graphql = (body: unknown, status = 200) => ({ status, headers: {}, body: JSON.stringify(body) });
    expect(isStorableGraphQLResponse(graphql({ data: { create: { id: 1 } } }))).toBe(true);
    expect(
      isStorableGraphQLResponse(
        graphql({ data: null, errors: [{ extensions: { code: 'request.precondition_failed', status: 412 } }] }),
      ),
    ).toBe(true);
    expect(isStorableGraphQLResponse(graphql({ data: null, errors: [{ extensions: { code: 'BAD_USER_INPUT' } }] }))).toBe(false);
    expect(
      isStorableGraphQLResponse(graphql({ data: null, errors: [{ extensions: { code: 'quota.exceeded', status: 429 } }] })),
    ).toBe(false);
    expect(isStorableGraphQLResponse(graphql({ data: null, errors: [{ extensions: { code: 'INTERNAL_SERVER_ERROR' } }] }))).toBe(
      false,
    );
    expect(isStorableGraphQLResponse(graphql({ errors: [{ message: 'x' }] }, 400))).toBe(false);
  });
});
