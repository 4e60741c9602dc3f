import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ReplicaPool, type Replica } from '../../../gateway/subgraph-calls/replica-pool.js';
import type { Logger } from '../../../platform/observability/logger.js';

/** The pool's timers and probes, on a fake clock: what leaves rotation, when it is probed, what is logged. */
describe('ReplicaPool', () => {
  let lines: Array<{ level: string; fields: Record<string, unknown>; message: string }>;
  let probes: Replica[];
  let answers: boolean;
  let rotation: number[];

  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
    lines = [];
    probes = [];
    answers = false;
    rotation = [];
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function pool(urls = ['http://a/graphql', 'http://b/graphql']) {
    const record = (level: string) => (fields: Record<string, unknown>, message: string) =>
      lines.push({ level, fields, message });
    const logger = { info: record('info'), warn: record('warn') } as unknown as Logger;
    return new ReplicaPool({
      subgraph: 'catalog',
      urls,
      firstBackoffMs: 1_000,
      logger,
      probe: async (replica) => {
        probes.push(replica);
        return answers;
      },
      onRotationChange: (up) => rotation.push(up),
    });
  }

  it('takes turns over the replicas in rotation', () => {
    const replicas = pool();
    expect(replicas.attemptOrder().map((r) => r.number)).toEqual([1, 2]);
    expect(replicas.attemptOrder().map((r) => r.number)).toEqual([2, 1]);
    expect(replicas.attemptOrder().map((r) => r.number)).toEqual([1, 2]);
  });

  it('takes a failed replica out, logs it once with its URL and reason, and keeps it last', () => {
    const replicas = pool();
    const [first] = replicas.attemptOrder();
    replicas.failed(first, { reason: 'answered HTTP 502', excerpt: '<html>' });
    replicas.failed(first, { reason: 'answered HTTP 502' });
    expect(lines).toEqual([
      {
        level: 'warn',
        fields: { subgraph: 'catalog', replica: 1, url: 'http://a/graphql', reason: 'answered HTTP 502', excerpt: '<html>' },
        message: 'subgraph replica failed; out of rotation until its health probe answers',
      },
    ]);
    expect(replicas.inRotation()).toEqual({ up: 1, of: 2 });
    expect(rotation).toEqual([1]);
    expect(replicas.attemptOrder().map((r) => r.number)).toEqual([2, 1]);
    replicas.close();
  });

  it('probes it when its back-off ends; an answer puts it back, silence backs it off longer', async () => {
    const replicas = pool();
    const [first] = replicas.attemptOrder();
    replicas.failed(first, { reason: 'connection failed (ECONNREFUSED)' });
    await vi.advanceTimersByTimeAsync(999);
    expect(probes).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(probes.map((r) => r.number)).toEqual([1]);
    expect(replicas.inRotation().up).toBe(1);
    // Second failure in a row (the probe): 2 s.
    await vi.advanceTimersByTimeAsync(1_999);
    expect(probes).toHaveLength(1);
    answers = true;
    await vi.advanceTimersByTimeAsync(1);
    expect(probes).toHaveLength(2);
    expect(replicas.inRotation()).toEqual({ up: 2, of: 2 });
    expect(lines.at(-1)?.message).toBe('subgraph replica answers its health probe; back in rotation');
    expect(rotation).toEqual([1, 2]);
    replicas.close();
  });

  it('stops probing when closed', async () => {
    const replicas = pool();
    replicas.failed(replicas.attemptOrder()[0], { reason: 'x' });
    replicas.close();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(probes).toEqual([]);
  });

  it('puts a replica back at once when a fetch on it succeeds (the last resort worked)', () => {
    const replicas = pool(['http://only/graphql']);
    const [only] = replicas.attemptOrder();
    replicas.failed(only, { reason: 'x' });
    expect(replicas.attemptOrder().map((r) => r.number)).toEqual([1]);
    replicas.succeeded(only);
    expect(replicas.inRotation()).toEqual({ up: 1, of: 1 });
    expect(lines.at(-1)?.message).toBe('subgraph replica serves again');
    replicas.close();
  });
});
