import { createHmac, generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { SignJWT, importJWK, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateEd25519, mintToken, type DevKeyPair } from '../../platform/auth/dev-keys.js';
import { newId, newUlid } from '../../platform/ids.js';
import { exchange, startReliabilitySystem, type HttpAnswer, type ReliabilitySystem } from '../support/reliability-system.js';
import { recordFigures } from '../support/reliability-figures.js';

/**
 * Token attacks over HTTP against the real process, on every door a token opens: a REST route
 * (read and write), the gateway's GraphQL endpoint, and each subgraph called directly (bypassing
 * the gateway). test/unit/platform/auth.test.ts proves the verifier; this proves the doors use it
 * and leak nothing beyond RFC 6750's challenge: a request without a bearer token gets the bare
 * `WWW-Authenticate: Bearer realm=…`, every forged token exactly the same `invalid_token` answer,
 * and a genuine token that only ran out says so (and nothing else) so its client fetches a new one.
 *
 * The process verifies with a JWKS file (AUTH_JWKS_URL=file://…) so that a token naming an
 * unknown `kid` is a real case, not one the single-key mode ignores.
 */
const tenant = newId('tenant');
const otherTenant = newId('tenant');
const SCOPES = 'catalog.read catalog.admin ai.assist ai.admin';
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

let keys: DevKeyPair;
let intruder: DevKeyPair;
let running: ReliabilitySystem;
let jwksDir: string;
const tried: { requests: number; serverErrors: number } = { requests: 0, serverErrors: 0 };

async function sign(claims: Record<string, unknown>, header: Record<string, unknown> = {}, jwk: JWK = keys.privateJwk) {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'EdDSA', kid: keys.privateJwk.kid, typ: 'JWT', ...header })
    .sign(await importJWK(jwk, 'EdDSA'));
}

const good = (extra: Record<string, unknown> = {}) => ({
  sub: 'svc:attacker',
  tid: tenant,
  scope: SCOPES,
  iat: now(),
  exp: now() + 600,
  ...extra,
});

/** Every forged token, named. Each would be accepted if the named check were missing. */
async function attacks(): Promise<Array<[string, string]>> {
  const valid = await mintToken(keys.privateJwk, { sub: 'svc:attacker', tid: tenant, scope: SCOPES });
  const [head, , signature] = valid.split('.');
  const hmacWith = (secret: string, header: Record<string, unknown>) => {
    const body = `${b64(header)}.${b64(good())}`;
    return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
  };
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const rs256 = await new SignJWT(good()).setProtectedHeader({ alg: 'RS256', kid: keys.privateJwk.kid }).sign(rsa.privateKey);
  return [
    ['alg none', `${b64({ alg: 'none', typ: 'JWT' })}.${b64(good())}.`],
    ['alg none with the valid signature kept', `${b64({ alg: 'none', typ: 'JWT' })}.${b64(good())}.${signature}`],
    ['HS256 signed with the public key (PEM)', hmacWith(keys.publicPem, { alg: 'HS256', typ: 'JWT' })],
    [
      'HS256 signed with the public key (JWK JSON)',
      hmacWith(JSON.stringify(keys.publicJwk), { alg: 'HS256', kid: keys.publicJwk.kid }),
    ],
    ['HS256 signed with the public key (x)', hmacWith(String(keys.publicJwk.x), { alg: 'HS256', kid: keys.publicJwk.kid })],
    ['RS256 from a key of its own', rs256],
    ['not yet valid (nbf)', await sign(good({ nbf: now() + 600 }))],
    ['issued in the future (iat)', await sign(good({ iat: now() + 600, exp: now() + 900 }))],
    ['too long-lived (1 hour)', await sign(good({ exp: now() + 3600 }))],
    ['too long-lived without iat', await sign({ ...good({ exp: now() + 3600 }), iat: undefined })],
    // exp − iat is compared with the 900 s maximum exactly: the 30 s clock tolerance is for
    // comparing timestamps with our clock, never added to the lifetime (929 s was accepted).
    ['too long-lived (901 s)', await sign(good({ exp: now() + 901 }))],
    ['too long-lived (929 s, inside the clock tolerance)', await sign(good({ exp: now() + 929 }))],
    ['too long-lived (901 s), late in its life', await sign(good({ iat: now() - 600, exp: now() + 301 }))],
    ['no iat (lifetime unknown), even expiring within 15 minutes', await sign({ ...good({ exp: now() + 300 }), iat: undefined })],
    ['no exp', await sign({ ...good(), exp: undefined })],
    ['no sub', await sign({ ...good(), sub: undefined })],
    ['tid not a tenant id', await sign(good({ tid: 'tenant-a' }))],
    ['unknown kid', await sign(good(), { kid: 'not-a-published-kid' })],
    ['wrong key (same kid)', await sign(good(), {}, intruder.privateJwk)],
    ['wrong key (its own kid)', await sign(good(), { kid: intruder.privateJwk.kid }, intruder.privateJwk)],
    [
      'tampered payload (tenant)',
      `${head}.${b64({ ...JSON.parse(Buffer.from(valid.split('.')[1], 'base64url').toString()), tid: otherTenant })}.${signature}`,
    ],
    [
      'tampered payload (exp)',
      `${head}.${b64({ ...JSON.parse(Buffer.from(valid.split('.')[1], 'base64url').toString()), exp: now() + 60 })}.${signature}`,
    ],
    ['tampered header (kid)', `${b64({ alg: 'EdDSA', kid: 'x', typ: 'JWT' })}.${valid.split('.')[1]}.${signature}`],
    ['truncated signature', valid.slice(0, -4)],
    ['oversized JOSE header (9 KB)', await sign(good(), { pad: 'x'.repeat(9 * 1024) })],
    ['oversized payload (9 KB)', await sign(good({ pad: 'y'.repeat(9 * 1024) }))],
    ['not a JWT', 'Zm9vYmFy'],
    ['five segments (JWE shape)', `${head}.a.b.c.d`],
    ['not token68 characters', 'abc"def'],
    ['two words', 'abc def'],
    // Expired, but also invalid: saying "expired" would send its client after a refresh that cannot help.
    ['expired and too long-lived', await sign(good({ iat: now() - 7200, exp: now() - 120 }))],
    ['expired and signed by another key', await sign(good({ iat: now() - 900, exp: now() - 120 }), {}, intruder.privateJwk)],
    ['expired and tampered (tenant)', await sign(good({ iat: now() - 900, exp: now() - 120, tid: 'tenant-a' }))],
  ];
}

/** Genuine tokens of ours that did nothing wrong but run out. */
async function expiredTokens(): Promise<Array<[string, string]>> {
  return [
    ['expired two minutes ago', await sign(good({ iat: now() - 900, exp: now() - 120 }))],
    ['expired a day ago', await sign(good({ iat: now() - 86_400 - 600, exp: now() - 86_400 }))],
    ['expired, with nbf', await sign(good({ iat: now() - 900, nbf: now() - 900, exp: now() - 60 }))],
  ];
}

/** Requests that present no bearer token at all: RFC 6750 §3 says no error code for them. */
const NO_BEARER_TOKEN = [
  undefined,
  `Basic ${Buffer.from('admin:admin').toString('base64')}`,
  'Bearer',
  'Bearer ',
  'Token abc.def.ghi',
  'Digest username="admin"',
];

const challenge = (description?: string) =>
  description
    ? `Bearer realm="catalog-ai", error="invalid_token", error_description="${description}"`
    : 'Bearer realm="catalog-ai"';

interface Door {
  name: string;
  call(authorization: string | undefined, tenantId?: string): Promise<HttpAnswer>;
  graphql: boolean;
}

function doors(): Door[] {
  const base = running.system.baseUrl;
  const headers = (authorization: string | undefined, tenantId: string, extra: Record<string, string> = {}) => ({
    ...(authorization === undefined ? {} : { authorization }),
    'x-tenant-id': tenantId,
    ...extra,
  });
  const gql =
    (url: string, query: string) =>
    (authorization: string | undefined, tenantId = tenant) =>
      exchange(url, {
        method: 'POST',
        headers: headers(authorization, tenantId, { 'content-type': 'application/json' }),
        body: JSON.stringify({ query }),
      });
  return [
    {
      name: 'REST GET /api/v1/courses',
      graphql: false,
      call: (a, t = tenant) => exchange(`${base}/api/v1/courses`, { headers: headers(a, t) }),
    },
    {
      name: 'REST POST /v1/admin/routing-rules',
      graphql: false,
      call: (a, t = tenant) =>
        exchange(`${base}/v1/admin/routing-rules`, {
          method: 'POST',
          headers: headers(a, t, { 'content-type': 'application/json', 'idempotency-key': newUlid() }),
          body: JSON.stringify({ featureKey: 'portal.triage', primary: { provider: 'mock', model: 'attack' }, fallbacks: [] }),
        }),
    },
    {
      name: 'gateway GraphQL',
      graphql: true,
      call: gql(`${base}/graphql`, '{ courses(first: 1) { edges { node { courseId } } } }'),
    },
    {
      name: 'catalog subgraph, direct',
      graphql: true,
      call: gql(running.catalogUrl, '{ courses(first: 1) { edges { node { courseId } } } }'),
    },
    { name: 'AI subgraph, direct', graphql: true, call: gql(running.aiUrl, '{ routingRules { ruleId } }') },
  ];
}

async function counted(answer: Promise<HttpAnswer>): Promise<HttpAnswer> {
  const result = await answer;
  tried.requests += 1;
  if (result.status >= 500) tried.serverErrors += 1;
  return result;
}

beforeAll(async () => {
  [keys, intruder] = await Promise.all([generateEd25519(), generateEd25519()]);
  jwksDir = await fs.mkdtemp(path.join(os.tmpdir(), 'reliability-jwks-'));
  const jwksFile = path.join(jwksDir, 'jwks.json');
  await fs.writeFile(jwksFile, JSON.stringify({ keys: [keys.publicJwk] }));
  running = await startReliabilitySystem(
    { AUTH_PUBLIC_KEY: undefined, AUTH_JWKS_URL: pathToFileURL(jwksFile).toString() },
    { keys },
  );
});

afterAll(async () => {
  await running?.close();
  if (jwksDir) await fs.rm(jwksDir, { recursive: true, force: true });
  recordFigures({
    suite: 'token attacks',
    faultsInjected: 0,
    eventsChecked: 0,
    lost: 0,
    duplicated: 0,
    requestsTried: tried.requests,
    serverErrors: tried.serverErrors,
  });
});

describe('token attacks on every door', () => {
  it('a valid token opens every door (the control)', async () => {
    const token = await mintToken(keys.privateJwk, { sub: 'svc:attacker', tid: tenant, scope: SCOPES });
    for (const door of doors()) {
      const answer = await counted(door.call(`Bearer ${token}`));
      expect([200, 201], `${door.name}: ${answer.text}`).toContain(answer.status);
      if (door.graphql) expect(answer.json.errors, door.name).toBeUndefined();
    }
  });

  it('every forged token is 401 invalid_token with the same bytes, an expired one says only that, and nothing changes', async () => {
    const rulesBefore = await running.db.prisma.providerRoutingRule.count({ where: { tenantId: tenant } });
    const [forged, expired] = [await attacks(), await expiredTokens()];
    const expectAnswer = (answer: HttpAnswer, door: Door, label: string, message: string, header: string) => {
      expect(answer.status, `${door.name}, ${label}: ${answer.text.slice(0, 300)}`).toBe(401);
      expect(answer.headers.get('www-authenticate'), `${door.name}, ${label}`).toBe(header);
      if (door.graphql) {
        expect(answer.json, `${door.name}, ${label}`).toEqual({
          errors: [{ message, extensions: { code: 'UNAUTHENTICATED', status: 401 } }],
        });
      } else {
        expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(answer.json, `${door.name}, ${label}`).toEqual({
          type: 'urn:problem:UNAUTHENTICATED',
          title: 'Unauthorized',
          status: 401,
          detail: message,
          code: 'UNAUTHENTICATED',
        });
      }
    };
    for (const door of doors()) {
      // The first answer of each kind is the reference its kind must repeat byte for byte.
      const reference = new Map<string, string>();
      const same = (kind: string, answer: HttpAnswer, label: string) => {
        if (!reference.has(kind)) reference.set(kind, answer.text);
        expect(answer.text, `${door.name}, ${label}`).toBe(reference.get(kind));
      };
      for (const authorization of NO_BEARER_TOKEN) {
        const answer = await counted(door.call(authorization));
        expectAnswer(answer, door, String(authorization), 'A valid bearer token is required', challenge());
        same('none', answer, String(authorization));
      }
      for (const [name, token] of forged) {
        for (const authorization of [`Bearer ${token}`, `bearer ${token}`]) {
          const answer = await counted(door.call(authorization));
          expectAnswer(answer, door, name, 'The access token is invalid', challenge('The access token is invalid'));
          same('invalid', answer, name);
        }
      }
      for (const [name, token] of expired) {
        const answer = await counted(door.call(`Bearer ${token}`));
        expectAnswer(answer, door, name, 'The access token expired', challenge('The access token expired'));
        same('expired', answer, name);
      }
      expect(new Set(reference.values()).size, door.name).toBe(3);
    }
    expect(await running.db.prisma.providerRoutingRule.count({ where: { tenantId: tenant } })).toBe(rulesBefore);
  });

  it('an Authorization header beyond the HTTP header limit is refused before any parsing (431), without detail', async () => {
    const huge = `Bearer ${'a'.repeat(20 * 1024)}.${'b'.repeat(1024)}.c`;
    for (const door of doors()) {
      const answer = await counted(door.call(huge));
      expect(answer.status, door.name).toBe(431);
      expect(answer.text).not.toMatch(/stack|node_modules|\.ts:\d+|exp|kid|signature/i);
    }
  });

  it('a valid token without the door’s scope is 403 authz.scope_missing on every door, naming the scopes that would do', async () => {
    // Minted but enforced nowhere once: a token with no scope read every course of its tenant.
    const token = await mintToken(keys.privateJwk, { sub: 'svc:attacker', tid: tenant, scope: 'unrelated.scope' });
    for (const door of doors()) {
      const answer = await counted(door.call(`Bearer ${token}`));
      // GraphQL over HTTP answers a resolver's error in the body; the REST door maps it to its status.
      if (door.graphql) expect([200, 403], `${door.name}: ${answer.text}`).toContain(answer.status);
      else expect(answer.status, `${door.name}: ${answer.text}`).toBe(403);
      const problem = door.graphql ? answer.json.errors?.[0]?.extensions : answer.json;
      expect(problem, `${door.name}: ${answer.text}`).toMatchObject({ code: 'authz.scope_missing', status: 403 });
      expect(problem.acceptedScopes, door.name).toEqual(expect.arrayContaining([expect.stringMatching(/^(catalog|ai)\./)]));
      if (door.graphql) expect(answer.json.data ?? null, door.name).toBeNull();
      expect(answer.text).not.toContain('courseId"');
    }
  });

  it('a valid token for tenant A with X-Tenant-Id of tenant B is 403 authz.tenant_not_a_member on every door', async () => {
    const token = await mintToken(keys.privateJwk, { sub: 'svc:attacker', tid: tenant, scope: SCOPES });
    for (const door of doors()) {
      const answer = await counted(door.call(`Bearer ${token}`, otherTenant));
      expect(answer.status, `${door.name}: ${answer.text}`).toBe(403);
      const code = door.graphql ? answer.json.errors?.[0]?.extensions?.code : answer.json.code;
      expect(code, door.name).toBe('authz.tenant_not_a_member');
      expect(answer.text).not.toContain(otherTenant.slice(4));
      expect(answer.text).not.toContain('courseId');
    }
  });
});
