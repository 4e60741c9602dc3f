import fs from 'node:fs';
import http from 'node:http';
import fc from 'fast-check';
import {
  Kind,
  parse,
  print,
  type FieldDefinitionNode,
  type InputObjectTypeDefinitionNode,
  type ObjectTypeDefinitionNode,
  type TypeNode,
} from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../events/bus/jetstream-bus.js';
import { subjectFor } from '../../events/envelope.js';
import { SUPERGRAPH_PATH } from '../../gateway/supergraph.js';
import { newId, newUlid } from '../../platform/ids.js';
import { silentLogger } from '../../platform/observability/logger.js';
import { ROUTES } from '../../rest-compat/route-table.js';
import { AI_DURABLES } from '../../subgraphs/ai/consumers.js';
import { CATALOG_DURABLES } from '../../subgraphs/catalog/consumers.js';
import { builtPayload, consumedEnvelope, draftPayload, gdprPayload, type ConsumedKind } from '../integration/catalog/harness.js';
import {
  privateServicesAvailable,
  startPrivateNats,
  startPrivatePostgres,
  type PrivateNats,
  type PrivatePostgres,
} from '../support/private-services.js';
import { freePort } from '../support/child-env.js';
import { eventually } from '../support/eventually.js';
import { recordFigures } from '../support/reliability-figures.js';
import { exchange, startReliabilitySystem, type HttpAnswer, type ReliabilitySystem } from '../support/reliability-system.js';

/**
 * Hostile input, property-based (fast-check): GraphQL variables for every operation of the
 * supergraph, REST bodies and path parameters for every route, and event payloads for every
 * consumer — huge strings, deep nesting, wrong types, invalid ids, invalid sha256 and version
 * labels, unknown enum values, prototype keys, control characters. The properties:
 *
 * - no 5xx, and no GraphQL INTERNAL_SERVER_ERROR inside a 200;
 * - a refused request writes nothing (row counts of every business table unchanged; the only
 *   documented exception is an admitted assist that failed, which leaves its provenance record);
 * - every hostile event has exactly one verdict (processed or dead-lettered); an invalid one is
 *   dead-lettered and leaves no row behind;
 * - routing rules cannot make the gateway call a host that is not on the allow-list.
 *
 * test/e2e/rest.test.ts already fuzzes REST requests for shape errors (missing or mistyped fields,
 * credentials, headers); this file goes after extreme values and the other two doors.
 */
const GRAPHQL_RUNS = Number(process.env.HOSTILE_GRAPHQL_RUNS ?? 300);
const REST_RUNS = Number(process.env.HOSTILE_REST_RUNS ?? 150);
const EVENT_RUNS = Number(process.env.HOSTILE_EVENT_RUNS ?? 120);
const SCOPES = 'catalog.read catalog.admin ai.assist ai.admin';
const tenant = newId('tenant');
const tally = { requests: 0, serverErrors: 0, events: 0, lost: 0, duplicated: 0 };
/** How far GraphQL attempts got: refused before execution (400), refused by a resolver, or executed. */
const graphqlOutcomes = { coercion: 0, resolver: 0, executed: 0 };

const runs = privateServicesAvailable('hostile input', ['nats-server']);

// ------------------------------------------------------------------------------ hostile values

/** Deeply nested JSON; fast-check prints it by its shape (printing it whole overflows the stack). */
function nested(depth: number, leaf: unknown, asArray: boolean): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = asArray ? [value] : { a: value };
  return Object.defineProperty(value as object, fc.toStringMethod, {
    value: () => `${asArray ? 'array' : 'object'} nested ${depth} deep`,
    enumerable: false,
  });
}

const HUGE = 'x'.repeat(300_000);
const invalidIds = fc.constantFrom(
  'crs_',
  'crs_01arz3ndektsv4rrffq69g5fav',
  'crs_01ARZ3NDEKTSV4RRFFQ69G5FAI',
  'crs_01ARZ3NDEKTSV4RRFFQ69G5FAVX',
  'crv_01ARZ3NDEKTSV4RRFFQ69G5FA',
  'ten_ZZZZZZZZZZZZZZZZZZZZZZZZZZ',
  '../../etc/passwd',
  "' OR 1=1 --",
  'crs_01ARZ3NDEKTSV4RRFFQ69G5FA\u0000',
  '%00',
  '',
);
const wellFormedIds = fc
  .constantFrom('course', 'courseVersion', 'taxonomy', 'provenance', 'routingRule', 'promptTemplate', 'tenant', 'user')
  .map((kind) => newId(kind as Parameters<typeof newId>[0]));
const shaLike = fc.constantFrom('g'.repeat(64), 'A'.repeat(64), 'a'.repeat(63), 'a'.repeat(65), '0x' + 'a'.repeat(62), '');
const labels = fc.constantFrom(
  '1.2',
  '1.2.3.4',
  '01.2.3',
  '-1.0.0',
  '1.2.3-beta',
  '99999999999999999999.0.0',
  'v1.0.0',
  ' 1.0.0',
  '1..0',
);
const enums = fc.constantFrom('ARCHIVED', 'v3', 'marketplace2', 'ORG', 'withdrawn', 'shadow2', 'LIVE', 'required!', 'public');
const strings = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom(
    HUGE,
    '€'.repeat(60_000),
    '\u0000\u0001\u0002',
    '\ud800',
    '<script>alert(1)</script>',
    '{{__proto__}}',
    '$where',
    '{"$gt": ""}',
  ),
);
const scalars = fc.oneof(
  strings,
  fc.integer(),
  fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53, -1, 0, Number.MAX_SAFE_INTEGER),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
);
// Deeper than JSON.stringify of the test's own client can print (about 4,000 levels) is not sendable.
const deep = fc
  .tuple(fc.integer({ min: 50, max: 2_500 }), fc.boolean())
  .map(([depth, asArray]) => nested(depth, 'leaf', asArray));
const protoKeys = fc.constant(
  JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}, "toString": 1}'),
);
const hostile: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: scalars },
  { weight: 2, arbitrary: invalidIds },
  { weight: 1, arbitrary: wellFormedIds },
  { weight: 1, arbitrary: shaLike },
  { weight: 1, arbitrary: labels },
  { weight: 1, arbitrary: enums },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: protoKeys },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

// ------------------------------------------------------------------------------ the supergraph

const supergraph = parse(fs.readFileSync(SUPERGRAPH_PATH, 'utf8'));
const objectTypes = new Map(
  supergraph.definitions
    .filter((d): d is ObjectTypeDefinitionNode => d.kind === Kind.OBJECT_TYPE_DEFINITION)
    .map((d) => [d.name.value, d]),
);
const inputTypes = new Map(
  supergraph.definitions
    .filter((d): d is InputObjectTypeDefinitionNode => d.kind === Kind.INPUT_OBJECT_TYPE_DEFINITION)
    .map((d) => [d.name.value, d]),
);
const operations: Array<{ root: 'query' | 'mutation'; field: FieldDefinitionNode }> = (['Query', 'Mutation'] as const).flatMap(
  (root) =>
    (objectTypes.get(root)?.fields ?? []).map((field) => ({
      root: root === 'Query' ? ('query' as const) : ('mutation' as const),
      field,
    })),
);

function namedType(type: TypeNode): string {
  return type.kind === Kind.NAMED_TYPE ? type.name.value : namedType(type.type);
}

/** A type-directed value, with hostile values at every level (sometimes the right shape, sometimes not). */
function valueFor(type: TypeNode, depth = 0): fc.Arbitrary<unknown> {
  const typed = (): fc.Arbitrary<unknown> => {
    if (type.kind === Kind.NON_NULL_TYPE) return valueFor(type.type, depth);
    if (type.kind === Kind.LIST_TYPE) return fc.array(valueFor(type.type, depth + 1), { maxLength: depth > 1 ? 1 : 4 });
    const name = type.name.value;
    const input = inputTypes.get(name);
    if (input) {
      if (depth > 3) return fc.constant({});
      const fields = Object.fromEntries((input.fields ?? []).map((f) => [f.name.value, valueFor(f.type, depth + 1)]));
      return fc.record(fields, {
        requiredKeys: (input.fields ?? []).filter((f) => f.type.kind === Kind.NON_NULL_TYPE).map((f) => f.name.value),
      });
    }
    if (name === 'ID') return fc.oneof({ weight: 1, arbitrary: invalidIds }, { weight: 3, arbitrary: wellFormedIds });
    if (name === 'Int') return fc.oneof(fc.integer({ min: -5, max: 2_000 }), fc.constantFrom(2 ** 31, -1));
    if (name === 'Boolean') return fc.boolean();
    if (name === 'JSONObject' || name === 'JSON')
      return fc.oneof(fc.dictionary(fc.string({ maxLength: 10 }), hostile, { maxKeys: 4 }), deep, protoKeys);
    if (name === 'DateTimeISO')
      return fc.oneof(
        fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
        strings,
      );
    return fc.oneof(strings, enums, labels, shaLike);
  };
  // Mostly the declared shape, so that hostile leaves get past variable coercion into resolvers.
  return fc.oneof({ weight: 8, arbitrary: typed() }, { weight: 1, arbitrary: hostile });
}

const graphqlAttempt = fc.constantFrom(...operations).chain(({ root, field }) => {
  const args = field.arguments ?? [];
  const returns = namedType(field.type);
  const selection = objectTypes.has(returns) ? ' { __typename }' : '';
  const declarations = args.length ? `(${args.map((a) => `$${a.name.value}: ${print(a.type)}`).join(', ')})` : '';
  const call = args.length ? `(${args.map((a) => `${a.name.value}: $${a.name.value}`).join(', ')})` : '';
  const query = `${root} Hostile${declarations} { ${field.name.value}${call}${selection} }`;
  const variables = fc.record(Object.fromEntries(args.map((a) => [a.name.value, valueFor(a.type)])));
  return variables.map((v) => ({ name: `${root}.${field.name.value}`, query, variables: v as Record<string, unknown> }));
});

// ------------------------------------------------------------------------------ the system

let nats: PrivateNats;
let running: ReliabilitySystem;
let bus: EventBus;
let token: string;
let canary: { port: number; hits: string[]; close(): Promise<void> };
let provider: { port: number; models: string[]; close(): Promise<void> };

async function listen(handler: (req: http.IncomingMessage, body: string) => { status: number; body: unknown }) {
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      const answer = handler(req, raw);
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Row counts of the business tables (what a refused request must not change). */
async function counts(): Promise<Record<string, number>> {
  const tables = [
    'Course',
    'CourseVersion',
    'Taxonomy',
    'TaxonomyVersion',
    'ProviderRoutingRule',
    'ProviderRoutingRuleVersion',
    'PromptTemplate',
    'AIProvenance',
    'HITLPolicy',
    'OutboxEvent',
    'InboxEvent',
    'ErasedAuthor',
  ];
  const sql = `SELECT ${tables.map((t) => `(SELECT count(*)::int FROM "${t}") AS "${t}"`).join(', ')}`;
  const [row] = await running.db.prisma.$queryRawUnsafe<Array<Record<string, number>>>(sql);
  return row;
}

function delta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(after).flatMap((k) => (after[k] !== before[k] ? [[k, after[k] - before[k]]] : [])));
}

function counted(answer: HttpAnswer): HttpAnswer {
  tally.requests += 1;
  if (answer.status >= 500) tally.serverErrors += 1;
  return answer;
}

/** Expected row changes of a refused request: none, or an admitted assist's documented record. */
function allowedDelta(changes: Record<string, number>, errorProvenance: boolean): boolean {
  if (Object.keys(changes).length === 0) return true;
  if (!errorProvenance) return false;
  return changes.AIProvenance === 1 && Object.keys(changes).every((k) => k === 'AIProvenance' || k === 'OutboxEvent');
}

describe.runIf(runs)('hostile input', () => {
  beforeAll(async () => {
    nats = await startPrivateNats();
    canary = { ...(await listen((req) => (canary.hits.push(`${req.method} ${req.url}`), { status: 200, body: {} }))), hits: [] };
    provider = {
      ...(await listen((_req, raw) => {
        const body = JSON.parse(raw || '{}') as { model?: string };
        provider.models.push(String(body.model));
        return {
          status: 200,
          body: {
            id: 'c',
            object: 'chat.completion',
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          },
        };
      })),
      models: [],
    };
    running = await startReliabilitySystem({
      NATS_URL: nats.url,
      CONSUMER_ACK_WAIT_SECONDS: '5',
      OPENAI_BASE_URL: `http://127.0.0.1:${provider.port}/v1`,
      // The hosted adapter may serve any residency, so the rules below are really used.
      OPENAI_RESIDENCIES: '*',
      AI_CONFIG_CACHE_MS: '0',
    });
    bus = await connectJetStreamBus(nats.url, { logger: silentLogger });
    token = await running.system.mintToken(tenant, SCOPES);
  });

  afterAll(async () => {
    await bus?.close().catch(() => undefined);
    await running?.close();
    await Promise.all([nats?.destroy(), canary?.close(), provider?.close()]);
    recordFigures({
      suite: 'hostile input (fast-check)',
      faultsInjected: 0,
      eventsChecked: tally.events,
      lost: tally.lost,
      duplicated: tally.duplicated,
      requestsTried: tally.requests,
      serverErrors: tally.serverErrors,
      notes: [
        `${GRAPHQL_RUNS} GraphQL (${graphqlOutcomes.coercion} refused at validation, ${graphqlOutcomes.resolver} by a resolver, ${graphqlOutcomes.executed} executed), ${REST_RUNS} REST, ${EVENT_RUNS} event cases; canary host hits ${canary?.hits.length ?? '?'}`,
      ],
    });
  });

  const headers = (extra: Record<string, string> = {}) => ({
    authorization: `Bearer ${token}`,
    'x-tenant-id': tenant,
    'content-type': 'application/json',
    ...extra,
  });

  it(`GraphQL: ${GRAPHQL_RUNS} hostile variable sets over every operation — no 5xx, refused ones write nothing`, async () => {
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(graphqlAttempt, async (attempt) => {
        seen.add(attempt.name);
        const before = await counts();
        const answer = counted(
          await exchange(`${running.system.baseUrl}/graphql`, {
            method: 'POST',
            headers: headers(attempt.query.startsWith('mutation') ? { 'idempotency-key': newUlid() } : {}),
            body: JSON.stringify({ query: attempt.query, variables: attempt.variables }),
          }),
        );
        const what = `${attempt.name}: ${answer.status} ${answer.text.slice(0, 300)}`;
        expect(answer.status, what).toBeLessThan(500);
        expect(answer.text, what).not.toMatch(/INTERNAL_SERVER_ERROR|\n\s+at |node_modules/);
        const errors = (answer.json?.errors ?? []) as Array<{ extensions?: { provenanceId?: string } }>;
        if (answer.status === 400) graphqlOutcomes.coercion += 1;
        else if (errors.length) graphqlOutcomes.resolver += 1;
        else graphqlOutcomes.executed += 1;
        if (errors.length && !answer.json?.data?.[attempt.name.split('.')[1]]) {
          const changes = delta(before, await counts());
          expect(
            allowedDelta(
              changes,
              errors.some((e) => e.extensions?.provenanceId),
            ),
            `${what}\nwrote ${JSON.stringify(changes)}`,
          ).toBe(true);
        }
      }),
      { numRuns: GRAPHQL_RUNS, endOnFailure: true },
    );
    // The generator reached (nearly) every operation.
    expect(seen.size).toBeGreaterThanOrEqual(Math.min(operations.length, Math.floor(GRAPHQL_RUNS / 10)) - 2);
  });

  it('a body nested 3,000 levels deep is 400 on every door that reads one, not a stack overflow (500)', async () => {
    const deepBody = (inner: unknown) => JSON.stringify(inner).length && inner;
    const nestedInput = nested(3_000, 'x', false);
    const attempts: Array<[string, string, unknown]> = [
      [
        'gateway mutation',
        `${running.system.baseUrl}/graphql`,
        {
          query:
            'mutation($i: JSONObject!) { assist(input: { featureKey: "portal.triage", variables: $i, context: { facilityId: "f", specialty: "s" } }) { provenanceId } }',
          variables: { i: nestedInput },
        },
      ],
      [
        'gateway query',
        `${running.system.baseUrl}/graphql`,
        { query: '{ courses(first: 1) { count } }', variables: { v: nestedInput } },
      ],
      [
        'REST assist',
        `${running.system.baseUrl}/v1/ai/assist`,
        { featureKey: 'portal.triage', variables: nestedInput, context: { facilityId: 'f', specialty: 's' } },
      ],
      ['REST routing rule', `${running.system.baseUrl}/v1/admin/routing-rules`, deepBody(nested(3_000, 1, true))],
      ['catalog subgraph', running.catalogUrl, { query: '{ courses(first: 1) { count } }', variables: { v: nestedInput } }],
      ['AI subgraph', running.aiUrl, { query: '{ routingRules { ruleId } }', variables: { v: nestedInput } }],
    ];
    for (const [name, url, body] of attempts) {
      const answer = counted(
        await exchange(url, { method: 'POST', headers: headers({ 'idempotency-key': newUlid() }), body: JSON.stringify(body) }),
      );
      expect(answer.status, `${name}: ${answer.text}`).toBe(400);
      expect(answer.text, name).toMatch(/nests deeper than 64 levels/);
    }
  });

  // A lone surrogate (JSON's "\ud800") was a 500 on mutations: the Idempotency-Key fingerprint's
  // canonical JSON refuses it. Now the body is refused at the door.
  it.each([
    ['a NUL character', 'x\u0000y'],
    ['a lone surrogate', '\ud800'],
  ])('%s in every string argument of every operation with scalar arguments is refused, never a 500', async (what, bad) => {
    const sample: Record<string, unknown> = { Int: 1, Boolean: false, DateTimeISO: new Date().toISOString(), Float: 1 };
    let swept = 0;
    for (const { root, field } of operations) {
      const args = field.arguments ?? [];
      if (args.some((a) => !['String', 'ID'].includes(namedType(a.type)) && !(namedType(a.type) in sample))) continue;
      if (!args.some((a) => ['String', 'ID'].includes(namedType(a.type)))) continue;
      const variables = Object.fromEntries(
        args.map((a) => {
          const name = namedType(a.type);
          const value = name === 'String' || name === 'ID' ? bad : sample[name];
          return [
            a.name.value,
            a.type.kind === Kind.LIST_TYPE || (a.type.kind === Kind.NON_NULL_TYPE && a.type.type.kind === Kind.LIST_TYPE)
              ? [value]
              : value,
          ];
        }),
      );
      const returns = namedType(field.type);
      const query = `${root === 'query' ? 'query' : 'mutation'} Nul(${args.map((a) => `$${a.name.value}: ${print(a.type)}`).join(', ')}) { ${field.name.value}(${args
        .map((a) => `${a.name.value}: $${a.name.value}`)
        .join(', ')})${objectTypes.has(returns) ? ' { __typename }' : ''} }`;
      const answer = counted(
        await exchange(`${running.system.baseUrl}/graphql`, {
          method: 'POST',
          headers: headers(root === 'mutation' ? { 'idempotency-key': newUlid() } : {}),
          body: JSON.stringify({ query, variables }),
        }),
      );
      expect(answer.status, `${what}, ${field.name.value}: ${answer.text}`).toBeLessThan(500);
      if (bad === '\ud800') expect(answer.status, `${field.name.value}: ${answer.text}`).toBe(400);
      expect(answer.text, field.name.value).not.toMatch(/INTERNAL_SERVER_ERROR/);
      swept += 1;
    }
    expect(swept).toBeGreaterThan(15);
  });

  it(`REST: ${REST_RUNS} hostile bodies and path parameters over every route — no 5xx, refused ones write nothing`, async () => {
    const routeAttempt = fc.constantFrom(...ROUTES).chain((route) =>
      fc
        .record({
          param: fc.oneof(
            invalidIds,
            wellFormedIds,
            strings.filter((s) => s.length < 2_000),
          ),
          body: fc.oneof(
            fc.dictionary(
              fc.constantFrom(
                'featureKey',
                'variables',
                'context',
                'primary',
                'fallbacks',
                'title',
                'tags',
                'eventIds',
                'maxCount',
                'authors',
                'x',
              ),
              hostile,
              { maxKeys: 5 },
            ),
            hostile,
            deep,
          ),
          raw: fc.option(
            fc.constantFrom('{"a":'.repeat(50_000), '['.repeat(100_000), '{"a":1}garbage', '\u0000', '{"__proto__":{"x":1}}'),
            { freq: 5 },
          ),
        })
        .map((parts) => ({ route, ...parts })),
    );
    await fc.assert(
      fc.asyncProperty(routeAttempt, async ({ route, param, body, raw }) => {
        // Lone surrogates cannot be percent-encoded; a client would send their replacement.
        const path = route.path.replace(
          /\{[^}]+\}/g,
          encodeURIComponent(
            String(param).replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'),
          ),
        );
        const writes = route.method !== 'GET';
        const before = await counts();
        const answer = counted(
          await exchange(`${running.system.baseUrl}${path}`, {
            method: route.method,
            headers: headers(writes ? { 'idempotency-key': newUlid(), 'if-match': '*' } : {}),
            body: writes ? (raw ?? JSON.stringify(body)) : undefined,
          }),
        );
        const what = `${route.method} ${path.slice(0, 80)}: ${answer.status} ${answer.text.slice(0, 300)}`;
        expect(answer.status, what).toBeLessThan(500);
        expect(answer.text, what).not.toMatch(/\n\s+at |node_modules|\.ts:\d+/);
        if (answer.status >= 400) {
          const changes = delta(before, await counts());
          expect(
            allowedDelta(changes, typeof answer.json?.provenanceId === 'string'),
            `${what}\nwrote ${JSON.stringify(changes)}`,
          ).toBe(true);
        }
      }),
      { numRuns: REST_RUNS, endOnFailure: true },
    );
  });

  it(`events: ${EVENT_RUNS} hostile messages on every consumer — each gets one verdict, invalid ones are dead-lettered and write nothing`, async () => {
    type Shot = { kind: ConsumedKind; eventId?: string; seq: number; mustDeadLetter: boolean; label: string };
    const shots: Shot[] = [];
    const kinds: ConsumedKind[] = ['built', 'draft', 'gdpr'];
    const durableOf: Record<ConsumedKind, string> = {
      built: CATALOG_DURABLES.playPackageBuilt,
      draft: CATALOG_DURABLES.courseDraftPublished,
      gdpr: CATALOG_DURABLES.gdprSubjectRequest,
    };
    expect(Object.values(CATALOG_DURABLES).sort()).toEqual(Object.values(durableOf).sort());
    // Every durable on a subject gives each message a verdict of its own: GDPR requests reach the
    // AI subgraph's consumer too.
    const consumersOf = (kind: ConsumedKind): string[] =>
      kind === 'gdpr' ? [durableOf.gdpr, AI_DURABLES.gdprSubjectRequest] : [durableOf[kind]];
    const subjects: Record<ConsumedKind, string> = {
      built: subjectFor('content.play_package.built', 1),
      draft: subjectFor('authoring.course_draft.published', 1),
      gdpr: subjectFor('gdpr.subject_request.received', 1),
    };
    const valid = (kind: ConsumedKind, i: number) =>
      kind === 'built'
        ? builtPayload(tenant, `hostile-${i}`, '1.0.0')
        : kind === 'draft'
          ? draftPayload(tenant, `hostile-draft-${i}`)
          : gdprPayload(tenant, newId('user'), 'access');
    // Changes that make an event invalid under its schema (each must be dead-lettered).
    const invalidating: Array<[string, (payload: Record<string, unknown>, kind: ConsumedKind) => void]> = [
      [
        'sha256 not hex',
        (p, k) => (k === 'built' ? ((p.playPackage as Record<string, unknown>).sha256 = 'g'.repeat(64)) : (p.tenantId = 'ten_x')),
      ],
      [
        'sha256 upper-case',
        (p, k) => (k === 'built' ? ((p.playPackage as Record<string, unknown>).sha256 = 'A'.repeat(64)) : (p.tenantId = 42)),
      ],
      ['version label', (p, k) => (k === 'built' ? (p.versionLabel = '1.2') : (p.tenantId = null))],
      ['version label leading zero', (p, k) => (k === 'built' ? (p.versionLabel = '01.2.3') : delete p.tenantId)],
      ['tenant id lower-case', (p) => (p.tenantId = String(p.tenantId).toLowerCase())],
      ['required field missing', (p, k) => delete p[k === 'gdpr' ? 'requestId' : 'slug']],
      ['wrong type', (p, k) => (p[k === 'gdpr' ? 'subjectId' : 'defaultLocale'] = { nested: true })],
      // An unknown request type is tolerated (enum widening); one that is no enum value at all is not.
      ['requestType not an enum value', (p, k) => (k === 'gdpr' ? (p.requestType = '') : (p.slug = ''))],
      ['huge string where an id belongs', (p) => (p.tenantId = HUGE.slice(0, 100_000))],
      ['deep nesting in place of a string', (p, k) => (p[k === 'gdpr' ? 'subjectType' : 'slug'] = nested(2_000, 'x', false))],
    ];
    // Envelope-level breakage.
    const envelopeBreaks: Array<[string, (e: Record<string, unknown>) => void]> = [
      ['eventVersion 2', (e) => (e.eventVersion = 2)],
      [
        'eventType of another consumer',
        (e) =>
          (e.eventType =
            e.eventType === 'gdpr.subject_request.received' ? 'content.play_package.built' : 'gdpr.subject_request.received'),
      ],
      ['no eventId', (e) => delete e.eventId],
      ['payload an array', (e) => (e.payload = [1, 2, 3])],
      ['envelope tenant differs from the payload', (e) => (e.tenantId = newId('tenant'))],
    ];
    const shot = fc.record({
      kind: fc.constantFrom(...kinds),
      change: fc.oneof(
        fc.constantFrom(...invalidating).map((c) => ({ level: 'payload' as const, label: c[0], apply: c[1] })),
        fc.constantFrom(...envelopeBreaks).map((c) => ({ level: 'envelope' as const, label: c[0], apply: c[1] })),
        fc
          .constantFrom('not json {', '', '\u0000\u0001', '[]', 'null', '"a string"')
          .map((raw) => ({ level: 'raw' as const, label: `raw ${JSON.stringify(raw)}`, raw })),
        fc
          .tuple(
            fc.string({ minLength: 1, maxLength: 12 }).filter((k) => /^[a-z]+$/.test(k)),
            hostile,
          )
          .map(([key, value]) => ({
            level: 'extra' as const,
            label: `unknown field ${key}`,
            key,
            value,
          })),
        fc.constant({ level: 'enum' as const, label: 'unknown enum value' }),
      ),
    });
    await fc.assert(
      fc.asyncProperty(shot, async ({ kind, change }) => {
        const i = shots.length;
        const envelope = consumedEnvelope(kind, valid(kind, i)) as unknown as Record<string, unknown>;
        const payload = envelope.payload as Record<string, unknown>;
        let data: Buffer;
        let mustDeadLetter = true;
        if (change.level === 'raw') data = Buffer.from(change.raw);
        else {
          if (change.level === 'payload') change.apply(payload, kind);
          else if (change.level === 'envelope') change.apply(envelope);
          else if (change.level === 'extra') {
            payload[`x_${change.key}`] = change.value;
            mustDeadLetter = false;
          } else {
            // Tolerated (enum widening): a package of an unknown format is held until the catalog
            // knows it, an unknown visibility is stored as given, an unknown request type is
            // acknowledged and recorded.
            if (kind === 'built') (payload.playPackage as Record<string, unknown>).format = 'v3';
            else if (kind === 'draft') payload.visibility = 'public';
            else payload.requestType = 'restriction';
            mustDeadLetter = false;
          }
          data = Buffer.from(JSON.stringify(envelope));
        }
        const ack = await bus.publish(subjects[kind], data, { msgId: newUlid() });
        tally.events += 1;
        shots.push({
          kind,
          eventId: typeof envelope.eventId === 'string' ? envelope.eventId : undefined,
          seq: ack.seq,
          mustDeadLetter,
          label: change.label,
        });
      }),
      { numRuns: EVENT_RUNS, endOnFailure: true },
    );

    // Verdicts: processed (an inbox row of the consumer) or dead-lettered (a letter naming the seq).
    const verdicts = async () => {
      const letters = await bus.readStream('CATALOG_DLQ');
      const dead = new Map<string, number>();
      const reasons = new Map<string, string>();
      for (const l of letters) {
        const key = `${l.headers['x-consumer']}|${l.headers['x-original-subject']}#${l.headers['x-original-seq']}`;
        dead.set(key, (dead.get(key) ?? 0) + 1);
        reasons.set(key, l.headers['x-error'] ?? '');
      }
      const ids = shots.flatMap((s) => (s.eventId ? [s.eventId] : []));
      const inbox = await running.db.prisma.inboxEvent.findMany({
        where: { eventId: { in: ids } },
        select: { eventId: true, consumer: true },
      });
      return shots.flatMap((s) =>
        consumersOf(s.kind).map((consumer) => {
          const processed = inbox.filter((r) => r.eventId === s.eventId && r.consumer === consumer).length;
          const key = `${consumer}|${subjects[s.kind]}#${s.seq}`;
          return { ...s, consumer, processed, letters: dead.get(key) ?? 0, reason: reasons.get(key) };
        }),
      );
    };
    const deadline = Date.now() + 120_000;
    let result = await verdicts();
    while (result.some((v) => v.processed + v.letters === 0) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      result = await verdicts();
    }
    const noVerdict = result.filter((v) => v.processed + v.letters === 0);
    const twoVerdicts = result.filter((v) => v.processed + v.letters > 1);
    const invalidProcessed = result.filter((v) => v.mustDeadLetter && v.processed > 0);
    tally.lost += noVerdict.length;
    tally.duplicated += twoVerdicts.length;
    const show = (list: typeof result) =>
      list
        .slice(0, 5)
        .map(
          (v) =>
            `${v.kind} (${v.consumer}) ${v.label}: processed ${v.processed}, letters ${v.letters} ${v.reason?.slice(0, 200) ?? ''}`,
        )
        .join('\n');
    expect(noVerdict, show(noVerdict)).toEqual([]);
    expect(twoVerdicts, show(twoVerdicts)).toEqual([]);
    expect(invalidProcessed, show(invalidProcessed)).toEqual([]);
    // Dead-lettered events left nothing behind: no version, no event caused by them.
    const deadIds = result.filter((v) => v.letters > 0 && v.eventId).map((v) => v.eventId!);
    expect(await running.db.prisma.courseVersion.count({ where: { sourceEventId: { in: deadIds } } })).toBe(0);
    const caused = await running.db.prisma.$queryRaw<Array<{ n: number }>>`
      SELECT count(*)::int AS n FROM "OutboxEvent" WHERE envelope->>'causationId' = ANY(${deadIds})`;
    expect(caused[0].n).toBe(0);
    // Valid events with unknown fields or enum values were processed.
    const validRefused = result.filter((v) => !v.mustDeadLetter && v.processed !== 1);
    expect(validRefused, show(validRefused)).toEqual([]);
  });

  it('routing rules cannot point the gateway at a host outside the allow-list', async () => {
    const canaryUrl = `http://127.0.0.1:${canary.port}`;
    const targets = [
      `${canaryUrl}/v1`,
      `//127.0.0.1:${canary.port}/v1`,
      `@127.0.0.1:${canary.port}`,
      `127.0.0.1:${canary.port}`,
      `../../..//127.0.0.1:${canary.port}`,
      'http://169.254.169.254/latest/meta-data',
    ];
    const features = [
      'portal.triage',
      'virtual_care.soap_scaffold',
      'medication.reconciliation_assist',
      'patient_chart.note_summary',
    ];
    let accepted = 0;
    for (const [i, target] of targets.entries()) {
      // A URL as the provider name is refused; as a model name it is only ever a model name.
      for (const primary of [
        { provider: target, model: 'm' },
        { provider: 'openai-compatible', model: target },
      ]) {
        const answer = counted(
          await exchange(`${running.system.baseUrl}/v1/admin/routing-rules`, {
            method: 'POST',
            headers: headers({ 'idempotency-key': newUlid() }),
            body: JSON.stringify({
              featureKey: features[i % features.length],
              residency: `R${i}${primary.provider === target ? 'P' : 'M'}`,
              primary,
              fallbacks: [],
            }),
          }),
        );
        expect(answer.status, answer.text).toBeLessThan(500);
        if (primary.provider === target) expect(answer.status, answer.text).toBe(400);
        if (answer.status === 201) {
          accepted += 1;
          const assist = counted(
            await exchange(`${running.system.baseUrl}/v1/ai/assist`, {
              method: 'POST',
              headers: headers({ 'idempotency-key': newUlid() }),
              body: JSON.stringify({
                featureKey: features[i % features.length],
                residency: `R${i}M`,
                variables: { message: 'x', transcript: 'x', note: 'x', home_medications: 'x', hospital_medications: 'x' },
                context: { facilityId: 'f', specialty: 's' },
              }),
            }),
          );
          expect(assist.status, assist.text).toBeLessThan(500);
        }
      }
    }
    expect(accepted).toBeGreaterThan(0);
    // The configured provider was called with those strings as model names; the canary never.
    expect(provider.models.filter((m) => targets.includes(m)).length).toBeGreaterThan(0);
    expect(canary.hits).toEqual([]);
  });

  // ---------------------------------------------------------------- the front door (issue #14)

  /** `depth` fragments, each spreading the next `fanOut` times (2^49 spreads in 2 KB at 49 x 2). */
  const fragmentDocument = (depth: number, fanOut: number, leaf = '__typename') =>
    `query Bomb { ...F0 } ${Array.from(
      { length: depth },
      (_, i) => `fragment F${i} on Query { ${Array.from({ length: fanOut }, () => `...F${i + 1}`).join(' ')} }`,
    ).join(' ')} fragment F${depth} on Query { ${leaf} }`;
  /** Each GraphQL door of the system: the gateway, and each subgraph called directly. */
  const doors = () => ({
    gateway: `${running.system.baseUrl}/graphql`,
    catalog: running.catalogUrl,
    ai: running.aiUrl,
  });
  const post = async (url: string, body: unknown, extra: Record<string, string> = {}, as = token) =>
    counted(
      await exchange(url, {
        method: 'POST',
        headers: { ...headers(extra), authorization: `Bearer ${as}` },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    );
  const timed = async <T>(work: () => Promise<T>) => {
    const started = Date.now();
    const result = await work();
    return { result, ms: Date.now() - started };
  };

  it('a 49-level fragment document (any token, no scope) is refused at every door in well under a second while /healthz answers', async () => {
    const noScope = await running.system.mintToken(tenant, '');
    const bomb = fragmentDocument(49, 2);
    expect(bomb.length).toBeLessThan(4_096);
    for (const [door, url] of Object.entries(doors())) {
      const [refusal, health] = await Promise.all([
        timed(() => post(url, { query: bomb }, {}, noScope)),
        timed(() => exchange(`${running.system.baseUrl}/healthz`)),
      ]);
      expect(refusal.result.status, `${door}: ${refusal.result.text}`).toBe(400);
      expect(refusal.result.json.errors[0].extensions.code, door).toBe('query.too_costly');
      expect(refusal.ms, door).toBeLessThan(1_000);
      expect(health.result.status).toBe(200);
      expect(health.ms, door).toBeLessThan(1_000);
    }
  });

  it('any nest of fragments up to the body limit is answered (4xx or 200) within 2 s at every door', async () => {
    const maxBody = 1024 * 1024;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom('__typename', 'courses(first: 2) { edges { node { courseId } } }', '__schema { types { name } }'),
        fc.constantFrom('gateway', 'catalog', 'ai'),
        fc.integer({ min: 0, max: maxBody }),
        async (depth, fanOut, leaf, door, padding) => {
          const query = fragmentDocument(depth, fanOut, leaf);
          // Padding (a comment) takes the body towards the limit without adding tokens.
          const body = JSON.stringify({ query: `${query}\n#${'x'.repeat(Math.max(0, padding - query.length - 64))}` });
          fc.pre(body.length <= maxBody);
          const url = doors()[door as keyof ReturnType<typeof doors>];
          const { result, ms } = await timed(() => post(url, body));
          expect(result.status, result.text.slice(0, 300)).toBeLessThan(500);
          expect([200, 400].includes(result.status), result.text.slice(0, 300)).toBe(true);
          expect(ms).toBeLessThan(2_000);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('introspection counts like any field: 1,000 aliased __schema blocks are refused at every door, and 30 walks of the whole schema at the gateway', async () => {
    const thousand = `{ ${Array.from({ length: 1_000 }, (_, i) => `s${i}: __schema { types { fields { args { name } } } }`).join(' ')} }`;
    expect(thousand.length).toBeGreaterThan(50_000);
    const walk =
      '__schema { types { name description fields { name description args { name description type { name kind } } type { name kind ofType { name kind } } } } }';
    const thirty = `{ ${Array.from({ length: 30 }, (_, i) => `s${i}: ${walk}`).join(' ')} }`;
    for (const [door, url] of Object.entries(doors())) {
      const many = await timed(() => post(url, { query: thousand }));
      expect(many.result.status, door).toBe(400);
      expect(many.result.json.errors[0].extensions.code, door).toBe('query.too_many_tokens');
      expect(many.ms, door).toBeLessThan(1_000);
    }
    // Under the token and alias limits, the cost is what stops repeated walks of the graph's schema.
    const walks = await post(doors().gateway, { query: thirty });
    expect(walks.status).toBe(400);
    expect(walks.json.errors[0].extensions.code).toBe('query.too_costly');
    // One full introspection (what GraphiQL and Sandbox send) still answers.
    const one = await post(doors().gateway, { query: '{ __schema { types { name fields { name args { name } } } } }' });
    expect(one.status).toBe(200);
    expect(one.json.data.__schema.types.length).toBeGreaterThan(10);
  });

  it('a thousand operation names a client invents add no metric series', async () => {
    const operations = async () => {
      const text = (await exchange(`${running.system.baseUrl}/metrics`)).text;
      return new Set([...text.matchAll(/graphql_operation_duration_seconds_count\{[^}]*operation="([^"]*)"/g)].map((m) => m[1]));
    };
    await post(doors().gateway, { query: 'query Warmup { __typename }' });
    const before = await operations();
    for (let batch = 0; batch < 10; batch++) {
      await Promise.all(
        Array.from({ length: 100 }, (_, i) => post(doors().gateway, { query: `query Invented${batch}x${i} { __typename }` })),
      );
    }
    const after = await operations();
    expect([...after].sort()).toEqual([...before].sort());
    expect(after.has('other')).toBe(true);
    expect([...after].some((name) => name.startsWith('Invented'))).toBe(false);
  });

  it("answers Apollo Sandbox's preflight, and lets its page read the answer", async () => {
    for (const origin of ['https://studio.apollographql.com', 'https://sandbox.embed.apollographql.com']) {
      const preflight = counted(
        await exchange(`${running.system.baseUrl}/graphql`, {
          method: 'OPTIONS',
          headers: {
            origin,
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'authorization,content-type,x-tenant-id',
          },
        }),
      );
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe(origin);
      expect(preflight.headers.get('access-control-allow-headers')).toContain('x-tenant-id');
      const answer = await post(doors().gateway, { query: '{ __typename }' }, { origin });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('access-control-allow-origin')).toBe(origin);
    }
    const stranger = await exchange(`${running.system.baseUrl}/graphql`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(stranger.status).toBe(403);
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('ordinary GraphQL mistakes are 400 with a stable code at every door, never 500', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['unknown operationName', { query: 'query A { __typename }', operationName: 'B' }, 'OPERATION_RESOLUTION_FAILURE'],
      ['two anonymous operations', { query: '{ __typename } { __typename }' }, 'GRAPHQL_VALIDATION_FAILED'],
      ['two named, none chosen', { query: 'query A { __typename } query B { __typename }' }, 'OPERATION_RESOLUTION_FAILURE'],
      ['a subscription', { query: 'subscription S { __typename }' }, 'graphql.subscription_not_supported'],
    ];
    for (const [door, url] of Object.entries(doors())) {
      for (const [what, body, code] of cases) {
        const answer = await post(url, body);
        expect(answer.status, `${door}, ${what}: ${answer.text}`).toBe(400);
        expect(answer.json.errors[0].extensions.code, `${door}, ${what}`).toBe(code);
      }
    }
  });

  it('a browser GET /graphql without a token gets the landing page, or 401 when it prefers JSON — never 500', async () => {
    const page = counted(
      await exchange(`${running.system.baseUrl}/graphql`, { headers: { accept: 'text/html,application/xhtml+xml' } }),
    );
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    for (const accept of ['application/json, text/html', 'text/html;q=0.5, application/json', '*/*']) {
      const answer = counted(await exchange(`${running.system.baseUrl}/graphql?query=%7B__typename%7D`, { headers: { accept } }));
      expect(answer.status, accept).toBe(401);
      expect(answer.json.errors[0].extensions.code, accept).toBe('UNAUTHENTICATED');
    }
  });

  it('a caller X-Request-Id is kept only when it is a safe short token; a JWT there is replaced', async () => {
    const answer = await post(doors().gateway, { query: '{ __typename }' }, { 'x-request-id': token });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-request-id')).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
    const kept = await post(doors().gateway, { query: '{ __typename }' }, { 'x-request-id': 'checkout-42' });
    expect(kept.headers.get('x-request-id')).toBe('checkout-42');
    expect(running.system.output()).not.toContain(token);
  });

  it('the subgraph ports apply the same limits and refuse a mutation without an Idempotency-Key', async () => {
    const wide = `{ courses(first: 1000) { edges { node { courseId slug title description authors { userId displayName } } } } }`;
    for (const url of [running.catalogUrl]) {
      const costly = await post(url, { query: wide });
      expect(costly.status).toBe(400);
      expect(costly.json.errors[0].extensions.code).toBe('query.too_costly');
    }
    const mutation = {
      query:
        'mutation M($f: String!) { setFeatureFlag(input: { featureKey: $f, flag: "hitl.enabled", enabled: true, reason: "x" }) { featureKey } }',
      variables: { f: '*' },
    };
    const unkeyed = await post(running.aiUrl, mutation);
    expect(unkeyed.status).toBe(400);
    expect(unkeyed.json.errors[0].extensions.code).toBe('idempotency.key_required');
    const badKey = await post(running.aiUrl, mutation, { 'idempotency-key': 'not-a-ulid' });
    expect(badKey.json.errors[0].extensions.code).toBe('idempotency.key_invalid');
  });
});

describe.runIf(privateServicesAvailable('database outage at the door', ['postgres']))('the database unreachable', () => {
  let postgres: PrivatePostgres;
  let system: ReliabilitySystem;
  let bearer: string;

  beforeAll(async () => {
    postgres = await startPrivatePostgres('door_outage');
    system = await startReliabilitySystem({ DATABASE_URL: postgres.url, DB_POOL_SIZE: '4' });
    bearer = await system.system.mintToken(tenant, SCOPES);
  });

  afterAll(async () => {
    await system?.close();
    await postgres?.destroy();
  });

  it('answers 503 dependency.unavailable with Retry-After on GraphQL and REST, then recovers', async () => {
    const auth = { authorization: `Bearer ${bearer}`, 'x-tenant-id': tenant };
    const read = () =>
      exchange(`${system.system.baseUrl}/graphql`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ courses(first: 1) { edges { node { courseId } } } }' }),
      });
    const list = () => exchange(`${system.system.baseUrl}/api/v1/courses`, { headers: auth });
    expect((await read()).status).toBe(200);

    await postgres.stop('immediate');
    const graphql = await read();
    expect(graphql.status, graphql.text).toBe(503);
    expect(graphql.headers.get('retry-after')).toBe('1');
    expect(graphql.json.errors[0].extensions.code).toBe('dependency.unavailable');
    const rest = await list();
    expect(rest.status, rest.text).toBe(503);
    expect(rest.headers.get('retry-after')).toBe('1');
    expect(rest.headers.get('content-type')).toContain('application/problem+json');
    expect(rest.json).toMatchObject({ code: 'dependency.unavailable', status: 503 });
    tally.requests += 2;

    await postgres.start();
    await eventually(async () => expect((await read()).status).toBe(200), 'reads to recover after Postgres returned', {
      intervalMs: 10,
    });
    expect((await list()).status).toBe(200);
  });
});
