import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SignJWT, importJWK } from 'jose';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { generateEd25519, mintToken, type DevKeyPair } from '../../../platform/auth/dev-keys.js';
import { createTokenVerifier, type Principal, type TokenVerifier } from '../../../platform/auth/verifier.js';
import { AppError, unauthenticated } from '../../../platform/errors/errors.js';
import { jsonReply, pipeline, reply, type Endpoint, type Exchange, type Handler } from '../../../platform/http/pipeline.js';
import { authenticate, tenantGuard } from '../../../platform/http/stages/authenticate.js';
import { readBody } from '../../../platform/http/stages/body.js';
import { compression } from '../../../platform/http/stages/compression.js';
import { acceptsRequestCoding, chooseCoding } from '../../../platform/http/compression.logic.js';
import { cors, SANDBOX_ORIGINS } from '../../../platform/http/stages/cors.js';
import { errorReplies, graphqlErrorMediaType } from '../../../platform/http/stages/error-replies.js';
import { acceptedRequestId, requestId } from '../../../platform/http/stages/request-id.js';
import { route } from '../../../platform/http/stages/route.js';
import { silentLogger } from '../../../platform/observability/logger.js';

const TENANT = 'ten_01JD0000000000000000000000';

function exchange(
  options: { method?: string; path?: string; headers?: Record<string, string>; body?: string; endpoint?: Endpoint } = {},
): Exchange {
  const req = Readable.from(options.body === undefined ? [] : [Buffer.from(options.body)]) as unknown as IncomingMessage;
  req.headers = options.headers ?? {};
  return {
    req,
    res: {} as ServerResponse,
    method: options.method ?? 'GET',
    url: new URL(options.path ?? '/', 'http://localhost'),
    requestId: '',
    params: {},
    replyHeaders: {},
    endpoint: options.endpoint,
  };
}

const ok: Handler = async () => jsonReply(200, { ok: true });
const tenantEndpoint: Endpoint = { route: '/x', access: 'tenant', errors: 'problem', body: true, handle: ok };
const publicEndpoint: Endpoint = { route: '/p', access: 'public', errors: 'problem', handle: ok };

describe('requestId()', () => {
  it('keeps a safe caller id and echoes it', async () => {
    const ex = exchange({ headers: { 'x-request-id': 'checkout-42:retry.1' } });
    await requestId()(ex, ok);
    expect(ex.requestId).toBe('checkout-42:retry.1');
    expect(ex.replyHeaders['x-request-id']).toBe('checkout-42:retry.1');
  });

  it('replaces an id that is too long, or carries anything but [A-Za-z0-9._:-], by one of ours', () => {
    const jwt = 'eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ1c3JfMSIsInRpZCI6InRlbl8xIn0.c2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJl';
    for (const hostile of [jwt, 'a'.repeat(65), 'id with spaces', 'line\nbreak', '', 'ünïcode']) {
      expect(acceptedRequestId(hostile)).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
    }
    expect(acceptedRequestId(undefined)).toMatch(/^req_/);
  });
});

describe('cors()', () => {
  const preflight = (origin: string) =>
    exchange({
      method: 'OPTIONS',
      path: '/graphql',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,x-tenant-id' },
    });

  it("answers a preflight from Apollo Sandbox's origins with 204 and the headers the API reads", async () => {
    for (const origin of SANDBOX_ORIGINS) {
      const answer = await cors([...SANDBOX_ORIGINS])(preflight(origin), ok);
      expect(answer.status).toBe(204);
      expect(answer.headers['access-control-allow-origin']).toBe(origin);
      const allowed = answer.headers['access-control-allow-headers'].split(', ');
      for (const name of [
        'authorization',
        'x-tenant-id',
        'idempotency-key',
        'if-match',
        'traceparent',
        'accept-language',
        'content-type',
      ]) {
        expect(allowed).toContain(name);
      }
      expect(answer.headers['access-control-allow-methods']).toContain('PATCH');
      expect(answer.headers.vary).toContain('Origin');
    }
  });

  it('refuses a preflight from an origin not allowed with 403 cors.origin_not_allowed', async () => {
    const answer = await cors([...SANDBOX_ORIGINS])(preflight('https://evil.example'), ok);
    expect(answer.status).toBe(403);
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
    expect(JSON.parse(answer.body.toString())).toMatchObject({ code: 'cors.origin_not_allowed' });
  });

  it('lets an allowed page read the answer (errors included) and the headers clients need', async () => {
    const refused: Handler = async () => reply(401, '{}', { 'www-authenticate': 'Bearer' });
    const answer = await cors(['https://ui.example'])(
      exchange({ method: 'POST', headers: { origin: 'https://ui.example' } }),
      refused,
    );
    expect(answer.status).toBe(401);
    expect(answer.headers['access-control-allow-origin']).toBe('https://ui.example');
    const exposed = answer.headers['access-control-expose-headers'].split(', ');
    for (const name of ['etag', 'idempotent-replayed', 'traceparent', 'retry-after', 'location', 'content-language']) {
      expect(exposed).toContain(name);
    }
  });

  it('allows any origin with *, and adds nothing without an Origin or for another origin', async () => {
    const any = await cors('*')(exchange({ headers: { origin: 'https://x.example' } }), ok);
    expect(any.headers['access-control-allow-origin']).toBe('*');
    expect((await cors(['https://ui.example'])(exchange(), ok)).headers).toEqual({
      'content-type': 'application/json; charset=utf-8',
    });
    const other = await cors(['https://ui.example'])(exchange({ headers: { origin: 'https://x.example' } }), ok);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('route()', () => {
  const table = {
    resolve: (ex: Exchange) =>
      ex.url.pathname !== '/x'
        ? ({ kind: 'not_found' } as const)
        : ex.method === 'POST'
          ? ({ kind: 'found', endpoint: tenantEndpoint, params: {} } as const)
          : ({ kind: 'method_not_allowed', allow: ['POST'] } as const),
  };

  it('hands the request to the endpoint that knows it; 405 with Allow for another method; 404 otherwise', async () => {
    const found = exchange({ method: 'POST', path: '/x' });
    await route([table])(found, ok);
    expect(found.endpoint).toBe(tenantEndpoint);
    await expect(route([table])(exchange({ path: '/x' }), ok)).rejects.toMatchObject({
      code: 'request.method_not_allowed',
      headers: { allow: 'POST' },
    });
    await expect(route([table])(exchange({ path: '/y' }), ok)).rejects.toMatchObject({ code: 'request.not_found', status: 404 });
  });
});

describe('readBody()', () => {
  it('reads JSON up to the limit, refusing larger bodies (413), other media types (415) and deep nesting (400)', async () => {
    const post = (body: string, type = 'application/json') =>
      exchange({ method: 'POST', headers: { 'content-type': type }, body, endpoint: tenantEndpoint });
    const good = post('{"a":1}');
    await readBody(64)(good, ok);
    expect(good.body).toEqual({ a: 1 });
    await expect(readBody(64)(post(`{"a":"${'x'.repeat(100)}"}`), ok)).rejects.toMatchObject({
      code: 'request.payload_too_large',
      status: 413,
    });
    await expect(readBody(64)(post('a=1', 'text/plain'), ok)).rejects.toMatchObject({
      code: 'request.unsupported_media_type',
      status: 415,
    });
    await expect(readBody(1024)(post('['.repeat(100) + ']'.repeat(100)), ok)).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
  });

  // Found by the hostile-input property run: a lone surrogate reached the Idempotency-Key
  // fingerprint's canonical JSON, which refuses it, and the mutation answered 500.
  it('refuses text that is not well-formed Unicode (a lone surrogate, in a value or a key) with 400', async () => {
    const post = (body: string) =>
      exchange({ method: 'POST', headers: { 'content-type': 'application/json' }, body, endpoint: tenantEndpoint });
    for (const body of ['{"a":"\\ud800"}', '{"a":{"b":["x","\\udfff y"]}}', '{"\\ud83d":1}']) {
      await expect(readBody(1024)(post(body), ok), body).rejects.toMatchObject({
        code: 'BAD_USER_INPUT',
        status: 400,
        message: expect.stringContaining('not well-formed Unicode'),
      });
    }
    const paired = post('{"a":"\\ud83d\\ude00 ok"}');
    await readBody(1024)(paired, ok);
    expect(paired.body).toEqual({ a: '\u{1F600} ok' });
  });
});

describe('authenticate() and tenantGuard()', () => {
  const principal: Principal = { subject: 'usr_1', tenantId: TENANT, scopes: new Set(), token: 't' };
  const verifier: TokenVerifier = {
    verify: async (token) => {
      if (token !== 'good') throw unauthenticated();
      return principal;
    },
  };
  const both = pipeline([authenticate(verifier), tenantGuard()], ok);
  const call = (headers: Record<string, string>, endpoint = tenantEndpoint) => both(exchange({ headers, endpoint }));

  it('admits a verified caller of the tenant it names', async () => {
    expect((await call({ authorization: 'Bearer good', 'x-tenant-id': TENANT })).status).toBe(200);
  });

  it('refuses a missing or bad token (401), a missing tenant (400) and another tenant (403)', async () => {
    await expect(call({ 'x-tenant-id': TENANT })).rejects.toMatchObject({ code: 'UNAUTHENTICATED', status: 401 });
    await expect(call({ authorization: 'Bearer bad', 'x-tenant-id': TENANT })).rejects.toMatchObject({ status: 401 });
    await expect(call({ authorization: 'Bearer good' })).rejects.toMatchObject({
      code: 'authz.tenant_header_required',
      status: 400,
    });
    await expect(call({ authorization: 'Bearer good', 'x-tenant-id': 'ten_01JD0000000000000000000001' })).rejects.toMatchObject({
      code: 'authz.tenant_not_a_member',
      status: 403,
    });
  });

  it('lets public endpoints through without a caller', async () => {
    expect((await call({}, publicEndpoint)).status).toBe(200);
  });

  describe('the RFC 6750 challenge of a 401', () => {
    let keys: DevKeyPair;
    let real: ReturnType<typeof pipeline>;
    const now = () => Math.floor(Date.now() / 1000);
    const sign = async (claims: Record<string, unknown>, jwk = keys.privateJwk) =>
      new SignJWT({ sub: 'usr_1', tid: TENANT, ...claims })
        .setProtectedHeader({ alg: 'EdDSA' })
        .sign(await importJWK(jwk, 'EdDSA'));
    const refusal = async (authorization?: string) => {
      const error = await real(exchange({ headers: authorization ? { authorization } : {}, endpoint: tenantEndpoint })).then(
        () => undefined,
        (e: unknown) => e as AppError,
      );
      expect(error).toBeInstanceOf(AppError);
      expect(error).toMatchObject({ code: 'UNAUTHENTICATED', status: 401 });
      return { challenge: error!.headers?.['www-authenticate'], message: error!.message, details: error!.details };
    };

    beforeAll(async () => {
      keys = await generateEd25519();
      const verifier = await createTokenVerifier({
        publicKey: JSON.stringify(keys.publicJwk),
        maxTokenLifetimeSeconds: 900,
        clockToleranceSeconds: 5,
      });
      real = pipeline([authenticate(verifier)], ok);
    });

    it('names only the realm when no bearer token is presented (no error attribute)', async () => {
      for (const authorization of [undefined, 'Bearer', 'Bearer   ', 'Basic YWRtaW46YWRtaW4=', 'Token abc']) {
        const answer = await refusal(authorization);
        expect(answer.challenge, String(authorization)).toBe('Bearer realm="catalog-ai"');
        expect(answer.message).toBe('A valid bearer token is required');
      }
    });

    it('says invalid_token and "expired" for a genuine token past its exp', async () => {
      const expired = await sign({ iat: now() - 900, exp: now() - 60 });
      expect(await refusal(`Bearer ${expired}`)).toEqual({
        challenge: 'Bearer realm="catalog-ai", error="invalid_token", error_description="The access token expired"',
        message: 'The access token expired',
        details: undefined,
      });
    });

    it('says invalid_token and "invalid" for every other failure, whatever check failed', async () => {
      const valid = await mintToken(keys.privateJwk, { sub: 'usr_1', tid: TENANT, scope: '' });
      const other = await generateEd25519();
      const cases = [
        'abc.def.ghi',
        'not a token',
        valid.slice(0, -3),
        await sign({ iat: now(), exp: now() + 3600 }),
        await sign({ iat: now(), nbf: now() + 600, exp: now() + 700 }),
        await sign({ iat: now(), exp: now() + 60, tid: 'tenant-a' }),
        // Expired and invalid otherwise too: "expired" would invite a refresh that cannot help.
        await sign({ iat: now() - 7200, exp: now() - 60 }),
        // Expired, but never ours: the signature is checked before anything is said about exp.
        await sign({ iat: now() - 900, exp: now() - 60 }, other.privateJwk),
      ];
      for (const token of cases) {
        expect(await refusal(`Bearer ${token}`), token).toEqual({
          challenge: 'Bearer realm="catalog-ai", error="invalid_token", error_description="The access token is invalid"',
          message: 'The access token is invalid',
          details: undefined,
        });
      }
    });
  });
});

describe('errorReplies()', () => {
  const failing =
    (error: unknown): Handler =>
    async () => {
      throw error;
    };

  it('answers problem+json with the code, or a GraphQL error body for GraphQL endpoints', async () => {
    const problem = await errorReplies(silentLogger)(
      exchange({ endpoint: publicEndpoint }),
      failing(new AppError('request.not_found', 'gone')),
    );
    expect(problem.status).toBe(404);
    expect(problem.headers['content-type']).toContain('application/problem+json');
    expect(JSON.parse(problem.body.toString())).toMatchObject({ code: 'request.not_found', status: 404, detail: 'gone' });
    const graphqlEndpoint: Endpoint = { ...publicEndpoint, errors: 'graphql' };
    const graphql = await errorReplies(silentLogger)(exchange({ endpoint: graphqlEndpoint }), failing(unauthenticated()));
    expect(graphql.status).toBe(401);
    expect(JSON.parse(graphql.body.toString())).toMatchObject({
      errors: [{ extensions: { code: 'UNAUTHENTICATED', status: 401 } }],
    });
  });

  it('never lets the text of an unexpected error out', async () => {
    const answer = await errorReplies(silentLogger)(exchange(), failing(new Error('password=hunter2 at /srv/app')));
    expect(answer.status).toBe(500);
    expect(answer.body.toString()).not.toContain('hunter2');
  });
});

describe('compression()', () => {
  const big = { items: Array.from({ length: 200 }, (_, i) => ({ id: `crs_${i}`, title: 'Recognising sepsis' })) };
  const bigJson: Handler = async () => jsonReply(200, big, { etag: '"v1"' });
  const compress = (acceptEncoding: string | undefined, handler: Handler = bigJson, method = 'GET') =>
    compression()(
      exchange({ method, headers: acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding } }),
      handler,
    );

  it('gzips or brotli-compresses a large JSON reply as Accept-Encoding allows, keeping its ETag', async () => {
    const gz = await compress('gzip');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.headers.vary).toBe('Accept-Encoding');
    expect(gz.headers.etag).toBe('"v1"');
    expect(JSON.parse(zlib.gunzipSync(gz.body).toString('utf8'))).toEqual(big);
    expect(gz.body.length).toBeLessThan(JSON.stringify(big).length / 4);

    const br = await compress('gzip, deflate, br');
    expect(br.headers['content-encoding']).toBe('br');
    expect(JSON.parse(zlib.brotliDecompressSync(br.body).toString('utf8'))).toEqual(big);
    expect((await compress('br;q=0.5, gzip;q=0.9')).headers['content-encoding']).toBe('gzip');
  });

  it('sends identity without Accept-Encoding, when it refuses both codings, for small replies, HEAD and 204', async () => {
    for (const accept of [undefined, 'identity', 'gzip;q=0, br;q=0', '*;q=0']) {
      const plain = await compress(accept);
      expect(plain.headers['content-encoding'], String(accept)).toBeUndefined();
      expect(plain.headers.vary).toBe('Accept-Encoding');
      expect(JSON.parse(String(plain.body))).toEqual(big);
    }
    expect((await compress('gzip', ok)).headers['content-encoding']).toBeUndefined();
    expect((await compress('gzip', bigJson, 'HEAD')).headers['content-encoding']).toBeUndefined();
    expect((await compress('gzip', async () => reply(204, ''))).headers['content-encoding']).toBeUndefined();
    expect((await compress('*')).headers['content-encoding']).toBe('br');
  });

  it('passes a reply it does not compress on as it came, its text not encoded here (the socket write encodes it)', async () => {
    const text = JSON.stringify(big);
    const textReply: Handler = async () => reply(200, text, { 'content-type': 'application/json' });
    const encode = vi.spyOn(Buffer, 'from');
    try {
      for (const [accept, method] of [
        [undefined, 'GET'],
        ['identity', 'GET'],
        ['gzip', 'HEAD'],
      ] as const) {
        const plain = await compress(accept, textReply, method);
        expect(plain.body, `${accept} ${method}`).toBe(text);
        expect(plain.headers.vary).toBe('Accept-Encoding');
      }
      expect(encode.mock.calls.filter(([value]) => value === text)).toEqual([]);
      // Compressed, the text is encoded once, for the encoder.
      const gz = await compress('gzip', textReply);
      expect(zlib.gunzipSync(gz.body).toString('utf8')).toBe(text);
      expect(encode.mock.calls.filter(([value]) => value === text)).toHaveLength(1);
    } finally {
      encode.mockRestore();
    }
  });

  it('chooses by weight, our preference breaking ties', () => {
    expect(chooseCoding('gzip')).toBe('gzip');
    expect(chooseCoding('br, gzip')).toBe('br');
    expect(chooseCoding('GZIP;q=1, br;q=0.1')).toBe('gzip');
    expect(chooseCoding('deflate')).toBeUndefined();
    expect(chooseCoding('')).toBeUndefined();
  });
});

describe('readBody() and request content codings', () => {
  it('refuses a compressed request body with 415 request.unsupported_content_encoding', async () => {
    const refused = await readBody(1024)(
      exchange({
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body: '{}',
        endpoint: tenantEndpoint,
      }),
      ok,
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'request.unsupported_content_encoding', status: 415 });
    expect(acceptsRequestCoding('identity')).toBe(true);
    expect(acceptsRequestCoding(undefined)).toBe(true);
    expect(acceptsRequestCoding('br')).toBe(false);
  });
});

describe('graphqlErrorMediaType()', () => {
  it('answers application/graphql-response+json to a client that prefers or accepts only it', () => {
    expect(graphqlErrorMediaType('application/graphql-response+json, application/json;q=0.9')).toMatch(
      /^application\/graphql-response\+json/,
    );
    expect(graphqlErrorMediaType('application/graphql-response+json')).toMatch(/^application\/graphql-response\+json/);
    expect(graphqlErrorMediaType('application/json')).toMatch(/^application\/json/);
    expect(graphqlErrorMediaType('*/*')).toMatch(/^application\/json/);
    expect(graphqlErrorMediaType(undefined)).toMatch(/^application\/json/);
  });
});
