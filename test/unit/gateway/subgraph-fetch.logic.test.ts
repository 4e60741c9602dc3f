import { describe, expect, it } from 'vitest';
import { distinctRepresentations } from '../../../gateway/subgraph-calls/entity-representations.logic.js';
import {
  afterFailure,
  afterFetchSuccess,
  afterProbeSuccess,
  attemptOrder,
  backoffMs,
  HEALTHY,
} from '../../../gateway/subgraph-calls/replica-health.logic.js';
import {
  classifyAnswer,
  classifyTransportFailure,
  mayRetryElsewhere,
} from '../../../gateway/subgraph-calls/subgraph-answer.logic.js';

describe('what an attempt at a subgraph replica came back with', () => {
  it('is a GraphQL answer when the body is one, whatever the status (a subgraph answers its coded errors with 4xx)', () => {
    expect(classifyAnswer(200, '{"data":{"a":1}}')).toEqual({ kind: 'answered', status: 200, answer: { data: { a: 1 } } });
    expect(classifyAnswer(400, '{"errors":[{"message":"m","extensions":{"code":"query.too_costly"}}]}')).toMatchObject({
      kind: 'answered',
      status: 400,
    });
    expect(classifyAnswer(200, '{"data":null,"errors":[{"message":"m"}]}').kind).toBe('answered');
  });

  it('is unavailable on any 5xx, even with a GraphQL body, and on anything that is not a GraphQL response', () => {
    expect(classifyAnswer(502, '<html>nginx</html>')).toEqual({
      kind: 'unavailable',
      reason: 'answered HTTP 502',
      excerpt: '<html>nginx</html>',
      sent: true,
    });
    expect(classifyAnswer(503, '{"errors":[{"message":"draining"}]}').kind).toBe('unavailable');
    for (const body of ['<html>maintenance</html>', '{"status":"ok"}', '[]', '{"errors":"no"}', '{"data":[1]}', '', 'null']) {
      expect(classifyAnswer(200, body), body).toMatchObject({ kind: 'unavailable', sent: true });
    }
    expect(classifyAnswer(404, 'Not Found')).toMatchObject({ kind: 'unavailable', reason: expect.stringContaining('404') });
  });

  it('keeps only an excerpt of what answered, for the log', () => {
    const page = `<html>${'x'.repeat(5_000)}</html>`;
    const outcome = classifyAnswer(502, page);
    expect(outcome.kind === 'unavailable' && outcome.excerpt?.length).toBe(301);
  });

  it('tells a connection that was never made (nothing sent) from one that failed after the request may have left', () => {
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']) {
      expect(classifyTransportFailure({ code, timedOut: false, timeoutMs: 1 }), code).toMatchObject({ sent: false });
    }
    for (const code of ['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE', undefined]) {
      expect(classifyTransportFailure({ code, timedOut: false, timeoutMs: 1 }), String(code)).toMatchObject({ sent: true });
    }
    expect(classifyTransportFailure({ code: 'UND_ERR_ABORTED', timedOut: true, timeoutMs: 1500 })).toEqual({
      kind: 'unavailable',
      reason: 'no answer within 1500 ms',
      sent: true,
    });
  });

  it('lets a read go to another replica after any failure, a write only when it was never sent', () => {
    const refused = classifyTransportFailure({ code: 'ECONNREFUSED', timedOut: false, timeoutMs: 1 });
    const reset = classifyTransportFailure({ code: 'ECONNRESET', timedOut: false, timeoutMs: 1 });
    const badGateway = classifyAnswer(502, '');
    const answered = classifyAnswer(200, '{"data":{}}');
    expect([refused, reset, badGateway, answered].map((o) => mayRetryElsewhere(o, true))).toEqual([true, true, true, false]);
    expect([refused, reset, badGateway, answered].map((o) => mayRetryElsewhere(o, false))).toEqual([true, false, false, false]);
  });
});

describe("the gateway's view of a subgraph's replicas", () => {
  it('backs a failed replica off, doubling per consecutive failure up to 30 times the first back-off', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map((failures) => backoffMs(failures, 1_000))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ]);
    const once = afterFailure(HEALTHY, 10_000, 1_000);
    expect(once).toEqual({ up: false, failures: 1, probeAt: 11_000 });
    expect(afterFailure(once, 11_000, 1_000)).toEqual({ up: false, failures: 2, probeAt: 13_000 });
  });

  it('puts a replica whose probe answers back on probation: its next failure backs it off longer', () => {
    const probed = afterProbeSuccess(afterFailure(afterFailure(HEALTHY, 0, 100), 0, 100));
    expect(probed).toEqual({ up: true, failures: 2, probeAt: 0 });
    expect(afterFailure(probed, 0, 100).probeAt).toBe(400);
    expect(afterFetchSuccess()).toEqual(HEALTHY);
  });

  it('tries the replicas in rotation in turn, then those out of rotation (soonest probe first) as a last resort', () => {
    const down = (probeAt: number) => ({ up: false, failures: 1, probeAt });
    const replicas = [HEALTHY, down(500), HEALTHY, down(200), HEALTHY];
    expect(attemptOrder(replicas, 0)).toEqual([0, 2, 4, 3, 1]);
    expect(attemptOrder(replicas, 1)).toEqual([2, 4, 0, 3, 1]);
    expect(attemptOrder(replicas, 5)).toEqual([4, 0, 2, 3, 1]);
    expect(attemptOrder([down(9), down(3)], 7)).toEqual([1, 0]);
  });
});

describe('the representations of an _entities fetch', () => {
  const course = (id: string) => ({ __typename: 'Course', courseId: id });

  it('are sent once each, and the answer is laid out as the planner asked (each position its own copy)', () => {
    const planned = [course('a'), course('b'), course('a'), course('a'), course('b')];
    const fetch = distinctRepresentations({ representations: planned, first: 3 });
    expect(fetch.variables).toEqual({ representations: [course('a'), course('b')], first: 3 });
    const answer = fetch.expand({ data: { _entities: [{ aiProvenance: [{ id: 1 }] }, { aiProvenance: [] }] } });
    const entities = answer.data?._entities as Array<{ aiProvenance: unknown[] }>;
    expect(entities).toEqual([
      { aiProvenance: [{ id: 1 }] },
      { aiProvenance: [] },
      { aiProvenance: [{ id: 1 }] },
      { aiProvenance: [{ id: 1 }] },
      { aiProvenance: [] },
    ]);
    expect(entities[2]).not.toBe(entities[0]);
    expect(entities[2].aiProvenance).not.toBe(entities[0].aiProvenance);
  });

  it("repeats an entity's error at every position that entity was asked at; other errors pass as they are", () => {
    const fetch = distinctRepresentations({ representations: [course('a'), course('b'), course('a')] });
    const answer = fetch.expand({
      data: { _entities: [null, {}] },
      errors: [
        { message: 'denied', path: ['_entities', 0, 'aiProvenance'] },
        { message: 'whole fetch', extensions: { code: 'X' } },
      ],
    });
    expect(answer.errors).toEqual([
      { message: 'denied', path: ['_entities', 0, 'aiProvenance'] },
      { message: 'denied', path: ['_entities', 2, 'aiProvenance'] },
      { message: 'whole fetch', extensions: { code: 'X' } },
    ]);
  });

  it('leaves a fetch without repeats, or without representations, untouched', () => {
    const variables = { representations: [course('a'), course('b')] };
    const fetch = distinctRepresentations(variables);
    expect(fetch.variables).toBe(variables);
    const answer = { data: { _entities: [{}, {}] } };
    expect(fetch.expand(answer)).toBe(answer);
    expect(distinctRepresentations(undefined).variables).toBeUndefined();
    expect(distinctRepresentations({ id: 1 }).variables).toEqual({ id: 1 });
  });
});
