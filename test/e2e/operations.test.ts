import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../platform/ids.js';
import { eventually } from '../support/eventually.js';
import { ancestors, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { startSystemWithDatabase, type SystemProcess } from '../support/system-process.js';

/**
 * The running process's operational surface: one REST request traced through gateway, subgraph and
 * database into a local OTLP receiver; request logs with ids and without secrets; readiness detail.
 */
const tenant = newId('tenant');
const PROMPT = `Chest pain radiating to the left arm since this morning ${randomBytes(6).toString('hex')}`;

let otlp: OtlpReceiver;
let system: SystemProcess;
let close: () => Promise<void>;
let token: string;

const SERVER = 2;
const CLIENT = 3;

beforeAll(async () => {
  otlp = await startOtlpReceiver();
  ({ system, close } = await startSystemWithDatabase({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, LOG_LEVEL: 'info' }));
  token = await system.mintToken(tenant, 'catalog.read ai.assist');
});

afterAll(async () => {
  await close?.();
  await otlp?.close();
});

describe('traces', () => {
  it('one REST request is one connected trace: gateway, subgraph fetch (over loopback HTTP), catalog subgraph, database', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const response = await fetch(`${system.baseUrl}/api/v1/courses`, {
      headers: { authorization: `Bearer ${token}`, 'x-tenant-id': tenant, traceparent: `00-${traceId}-${callerSpan}-01` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('traceparent')).toContain(traceId);

    // The page read runs on the pool past Prisma (platform/db/pool-reads.ts), with a span of its own.
    const isDbQuery = (s: ReceivedSpan) => s.kind === CLIENT && s.attributes['db.system.name'] === 'postgresql';
    const isDbQueryUnder = (spans: ReceivedSpan[]) =>
      spans.some(
        (s) =>
          s.traceId === traceId &&
          isDbQuery(s) &&
          ancestors(s, spans).some((a) => a.attributes['service.component'] === 'catalog'),
      );
    const spans = (await otlp.waitFor(isDbQueryUnder, 30_000)).filter((s) => s.traceId === traceId);

    const gatewayServer = spans.find((s) => s.kind === SERVER && s.attributes['service.component'] === 'gateway');
    expect(gatewayServer).toMatchObject({
      name: 'GET /api/v1/courses',
      parentSpanId: callerSpan,
      attributes: { 'http.route': '/api/v1/courses', 'http.response.status_code': 200 },
    });
    // One process takes the road of separate ones: the gateway's fetch is a client span over HTTP,
    // and the catalog's server span, at its door, is its child.
    const fetchSpan = spans.find((s) => s.name === 'subgraph catalog');
    expect(fetchSpan).toMatchObject({ kind: CLIENT, attributes: { 'graphql.subgraph.name': 'catalog' } });
    const catalogServer = spans.find((s) => s.kind === SERVER && s.attributes['service.component'] === 'catalog');
    expect(catalogServer?.parentSpanId).toBe(fetchSpan!.spanId);
    expect(ancestors(fetchSpan!, spans).map((s) => s.spanId)).toContain(gatewayServer!.spanId);
    // Apollo's own query-planning spans sit between the REST route and the fetch.
    expect(ancestors(fetchSpan!, spans).map((s) => s.name)).toContain('gateway.request');

    const dbQuery = spans.find((s) => isDbQuery(s) && ancestors(s, spans).includes(fetchSpan!));
    expect(dbQuery?.name).toBe('SELECT Course');
    expect(dbQuery?.attributes['db.query.text']).toMatch(/SELECT .* FROM "Course"/);
    expect(dbQuery?.attributes['db.query.text']).not.toContain(tenant);
    for (const span of spans) expect(span.service).toBe('catalog-ai-federation-main');
  });
});

describe('logs', () => {
  it('carry request id, trace id and tenant, and never the token, the prompt or the output', async () => {
    const requestId = newId('request');
    const response = await fetch(`${system.baseUrl}/v1/ai/assist`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'x-tenant-id': tenant,
        'x-request-id': requestId,
        'idempotency-key': newUlid(),
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        featureKey: 'portal.triage',
        variables: { message: PROMPT },
        context: { facilityId: 'fac-1', specialty: 'gp' },
      }),
    });
    const body = (await response.json()) as { text?: string; provenanceId?: string };
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body.text?.length).toBeGreaterThan(10);

    const lines = () =>
      system
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    // An access line is written when its response has been sent, so the gateway's may trail the
    // response; the AI subgraph's door writes its own first, for the gateway's fetch.
    const isGatewayLine = (l: Record<string, unknown>) =>
      l.requestId === requestId && l.msg === 'request' && l.subgraph === undefined;
    await eventually(() => lines().some(isGatewayLine), "the gateway's access line", { timeoutMs: 10_000 });
    const mine = lines().filter((l) => l.requestId === requestId);
    const gatewayLine = mine.find(isGatewayLine);
    // The AI subgraph's own lines carry the request's ids, forwarded by the gateway's fetch.
    const aiLine = mine.find((l) => l.msg === 'assist' && l.subgraph === 'ai');
    expect(mine.find((l) => l.msg === 'request' && l.subgraph === 'ai')).toMatchObject({ route: '/graphql', status: 200 });
    expect(gatewayLine).toMatchObject({
      tenantId: tenant,
      method: 'POST',
      route: '/v1/ai/assist',
      status: 200,
      traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(aiLine).toMatchObject({ tenantId: tenant, traceId: gatewayLine!.traceId, provenanceId: body.provenanceId });

    const output = system.output();
    expect(output).not.toContain(token);
    expect(output).not.toContain(token.split('.')[2]);
    expect(output).not.toContain(PROMPT);
    expect(output).not.toContain(body.text!);
  });
});

describe('readiness', () => {
  it('lists each dependency with its state and whether it is required', async () => {
    const response = await fetch(`${system.baseUrl}/readyz`);
    const report = (await response.json()) as { ready: boolean; checks: Record<string, { status: string; required: boolean }> };
    expect(response.status).toBe(200);
    expect(report.ready).toBe(true);
    expect(report.checks.database).toMatchObject({ status: 'up', required: true });
    expect(report.checks['subgraph:catalog']).toMatchObject({ status: 'up', required: false });
    expect(report.checks['subgraph:ai']).toMatchObject({ status: 'up', required: false });
  });

  it('serves Prometheus metrics of all three servers of the process', async () => {
    const text = await (await fetch(`${system.baseUrl}/metrics`)).text();
    for (const service of ['gateway', 'catalog', 'ai'])
      expect(text).toMatch(new RegExp(`^http_requests_total\\{service="${service}",`, 'm'));
    expect(text).toMatch(/^process_cpu_seconds_total /m);
  });
});

describe('REST-compat in one process', () => {
  it("runs REST assist through the gateway's execute port, then the AI subgraph's door, as separate processes do", async () => {
    const count = async (service: string) => {
      const text = await (await fetch(`${system.baseUrl}/metrics`)).text();
      const line = new RegExp(
        `^graphql_operation_duration_seconds_count\\{service="${service}",operation="RestAssist",type="mutation",outcome="ok"\\} (\\d+)$`,
        'm',
      ).exec(text);
      return Number(line?.[1] ?? 0);
    };
    const [gatewayBefore, aiBefore] = [await count('gateway'), await count('ai')];
    const response = await fetch(`${system.baseUrl}/v1/ai/assist`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'x-tenant-id': tenant,
        'content-type': 'application/json',
        'idempotency-key': newUlid(),
      },
      body: JSON.stringify({
        featureKey: 'portal.triage',
        variables: { locale: 'en', message: PROMPT },
        context: { facilityId: 'fac-1', specialty: 'general' },
      }),
    });
    expect(response.status, await response.clone().text()).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'completed', provenanceId: expect.stringMatching(/^prv_/) });
    expect(await count('gateway')).toBe(gatewayBefore + 1);
    // The planner's fetch (`RestAssist__ai__0`) is labelled by the document it was planned for.
    expect(await count('ai')).toBe(aiBefore + 1);
  });
});
