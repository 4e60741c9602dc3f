import { afterAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../platform/ids.js';
import { privateServicesAvailable, startPrivateRedis, type PrivateRedis } from '../support/private-services.js';
import { recordFigures } from '../support/reliability-figures.js';
import { startSystemWithDatabase } from '../support/system-process.js';

/**
 * Request durability: a burst of idempotent POSTs (REST routing rules, REST assist, GraphQL
 * createRoutingRule), the process killed with SIGKILL at a random point of it, then every request
 * retried with its own Idempotency-Key against the restarted process until it has a final answer.
 * Counted in the database: each key has exactly one effect, and the answer the client finally
 * holds names that effect (no result lost, none doubled). Once per idempotency store: the database
 * table (embedded default) and Redis (a private redis-server, which outlives the killed process).
 *
 * Two records make this hold: the gateway's Idempotency-Key record answers retries in the common
 * case, and each keyed mutation writes its result in its own transaction (IdempotentEffect,
 * platform/idempotency/effect-store.ts), so a kill between the subgraph's commit and the gateway's
 * record still leaves the key with its effect: once the record's lease runs out, the retry reaches
 * the subgraph, which answers the recorded result instead of running again.
 */
const BURST = Number(process.env.RELIABILITY_BURST ?? 300);
const CONCURRENCY = 40;
const LEASE_SECONDS = 5;
const RETRY_DEADLINE_MS = 120_000;

type Kind = 'rest-rule' | 'rest-assist' | 'graphql-rule';
interface Attempt {
  key: string;
  kind: Kind;
  /** A tenant per request: a tenant holds one rule per feature and residency. */
  tenant: string;
  token: string;
  /** Unique per request: how its effect is found in the database. */
  marker: string;
}

const redisAvailable = privateServicesAvailable('request durability (Redis store)', ['redis-server']);
const totals = { faults: 0, requests: 0, serverErrors: 0, lost: 0, duplicated: 0, notes: [] as string[] };
let redis: PrivateRedis | undefined;

afterAll(async () => {
  await redis?.destroy();
  recordFigures({
    suite: 'request durability (kill mid-burst)',
    faultsInjected: totals.faults,
    eventsChecked: 0,
    lost: totals.lost,
    duplicated: totals.duplicated,
    requestsTried: totals.requests,
    serverErrors: totals.serverErrors,
    notes: totals.notes,
  });
});

const stores = [{ name: 'database table', redis: false }, ...(redisAvailable ? [{ name: 'redis', redis: true }] : [])];

describe.each(stores)('kill -9 during a burst of idempotent POSTs ($name store)', ({ name, redis: useRedis }) => {
  it(`${BURST} requests, each retried with its key after the restart, have exactly one effect each`, async () => {
    if (useRedis) redis ??= await startPrivateRedis();
    const env = { IDEMPOTENCY_LEASE_SECONDS: String(LEASE_SECONDS), ...(useRedis ? { REDIS_URL: redis!.url } : {}) };
    const started = await startSystemWithDatabase(env);
    const db = started.db;
    const { system } = started;
    try {
      const kinds: Kind[] = ['rest-rule', 'rest-assist', 'graphql-rule'];
      const attempts: Attempt[] = [];
      for (let i = 0; i < BURST; i++) {
        const tenant = newId('tenant');
        const token = await system.mintToken(tenant, 'ai.admin ai.assist', { subject: 'svc:durability' });
        attempts.push({ key: newUlid(), kind: kinds[i % 3], tenant, token, marker: `dur-${i}-${newUlid()}` });
      }
      const tenants = attempts.map((a) => a.tenant);

      const send = (base: string, attempt: Attempt) => {
        const headers = {
          authorization: `Bearer ${attempt.token}`,
          'x-tenant-id': attempt.tenant,
          'content-type': 'application/json',
          'idempotency-key': attempt.key,
        };
        const target = { provider: 'mock', model: attempt.marker };
        if (attempt.kind === 'rest-rule')
          return fetch(`${base}/v1/admin/routing-rules`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ featureKey: 'portal.triage', primary: target, fallbacks: [] }),
          });
        if (attempt.kind === 'rest-assist')
          return fetch(`${base}/v1/ai/assist`, {
            method: 'POST',
            headers,
            body: JSON.stringify({
              featureKey: 'portal.triage',
              variables: { message: 'durability' },
              context: { facilityId: attempt.marker, specialty: 'gp' },
            }),
          });
        return fetch(`${base}/graphql`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            query: 'mutation Durable($input: CreateRoutingRuleInput!) { createRoutingRule(input: $input) { ruleId } }',
            variables: { input: { featureKey: 'virtual_care.soap_scaffold', primary: target, fallbacks: [] } },
          }),
        });
      };
      /**
       * What an answer tells the client: not final (409 idempotency.in_flight, 503: retry later),
       * or final — the id of the effect it names, or the refusal it is (e.g. a domain request.conflict
       * because the first, unrecorded execution already created the rule: its result is lost).
       */
      const answerOf = async (
        attempt: Attempt,
        response: Response,
      ): Promise<{ final: false } | { final: true; effect?: string; text: string }> => {
        const text = await response.text();
        totals.requests += 1;
        if (response.status >= 500) totals.serverErrors += 1;
        let json: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
        try {
          json = JSON.parse(text);
        } catch {
          return { final: false };
        }
        const code = json.code ?? json.errors?.[0]?.extensions?.code;
        if (response.status === 503 || code === 'idempotency.in_flight') return { final: false };
        const effect =
          attempt.kind === 'rest-rule'
            ? response.status === 201 && json.ruleId
            : attempt.kind === 'rest-assist'
              ? response.status === 200 && json.provenanceId
              : json.data?.createRoutingRule?.ruleId;
        return { final: true, effect: effect || undefined, text: `${response.status} ${text.slice(0, 200)}` };
      };

      // --- the burst, and the kill at a random point of it --------------------------------
      const killAfter = Math.floor(BURST * (0.2 + Math.random() * 0.5));
      let answered = 0;
      let killed: Promise<unknown> | undefined;
      const firstAnswers = new Map<string, string>();
      let next = 0;
      const worker = async () => {
        while (next < attempts.length) {
          const attempt = attempts[next++];
          try {
            const answer = await answerOf(attempt, await send(system.baseUrl, attempt));
            if (!killed && answer.final && !answer.effect) throw new Error(`${attempt.kind} before the kill: ${answer.text}`);
            if (answer.final && answer.effect) firstAnswers.set(attempt.key, answer.effect);
          } catch (error) {
            if (!killed) throw error;
            // Connection reset or refused by the killed process: the retry below settles it.
          }
          answered += 1;
          if (answered === killAfter) killed = system.kill('SIGKILL');
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      await killed;
      totals.faults += 1;
      const inFlightRecords = useRedis ? undefined : await db.prisma.idempotencyRecord.count({ where: { state: 'in_flight' } });

      // --- restart on the same database (and Redis), retry everything with its key --------
      // (restart() also removes the killed process's data folder; close() stops the new one.)
      const restarted = await started.restart();
      const finalAnswers = new Map<string, string>();
      const refusals = new Map<string, string>();
      const deadline = Date.now() + RETRY_DEADLINE_MS;
      let retries = 0;
      let pending = [...attempts];
      while (pending.length && Date.now() < deadline) {
        const still: Attempt[] = [];
        for (let at = 0; at < pending.length; at += CONCURRENCY) {
          await Promise.all(
            pending.slice(at, at + CONCURRENCY).map(async (attempt) => {
              retries += 1;
              const answer = await send(restarted.baseUrl, attempt).then(
                (response) => answerOf(attempt, response),
                () => ({ final: false as const }),
              );
              if (!answer.final) still.push(attempt);
              else if (answer.effect) finalAnswers.set(attempt.key, answer.effect);
              else refusals.set(attempt.key, answer.text);
            }),
          );
        }
        pending = still;
        // Keys of requests the kill interrupted stay leased until the lease (5 s) runs out.
        if (pending.length) await new Promise((resolve) => setTimeout(resolve, 1_000));
      }

      // --- the effects, counted in the database -------------------------------------------
      const markers = attempts.map((a) => a.marker);
      const rules = await db.prisma.$queryRaw<Array<{ model: string; ruleId: string }>>`
        SELECT v."primary"->>'model' AS model, v."ruleId" AS "ruleId" FROM "ProviderRoutingRuleVersion" v
        JOIN "ProviderRoutingRule" r ON r.id = v."ruleId" WHERE r."tenantId" = ANY(${tenants})`;
      const provenance = await db.prisma.aIProvenance.findMany({
        where: { tenantId: { in: tenants }, facilityId: { in: markers } },
        select: { id: true, facilityId: true },
      });
      const effects = new Map<string, string[]>();
      for (const rule of rules) effects.set(rule.model, [...(effects.get(rule.model) ?? []), rule.ruleId]);
      for (const row of provenance) effects.set(row.facilityId!, [...(effects.get(row.facilityId!) ?? []), row.id]);

      let lost = 0;
      let duplicated = 0;
      let mismatched = 0;
      const examples: string[] = [];
      for (const attempt of attempts) {
        const found = effects.get(attempt.marker) ?? [];
        const answer = finalAnswers.get(attempt.key);
        if (found.length > 1) duplicated += 1;
        else if (found.length === 0 || !answer) lost += 1;
        else if (answer !== found[0]) mismatched += 1;
        else continue;
        if (examples.length < 5)
          examples.push(
            `${attempt.kind} ${attempt.key}: effects ${found.join(',') || 'none'}, answer ${answer ?? refusals.get(attempt.key)}, before the kill ${firstAnswers.get(attempt.key)}`,
          );
      }
      totals.lost += lost;
      totals.duplicated += duplicated;
      totals.notes.push(
        `${name} store: killed after ${killAfter}/${BURST} answers; ${firstAnswers.size} answered before the kill; ${inFlightRecords ?? 'n/a'} keys left in flight; ${retries} retries; lost ${lost}, duplicated ${duplicated}, mismatched ${mismatched}`,
      );
      expect({ lost, duplicated, mismatched, unsettled: pending.length }, examples.join('\n')).toEqual({
        lost: 0,
        duplicated: 0,
        mismatched: 0,
        unsettled: 0,
      });
      // Answers given before the kill are the ones replayed after it.
      for (const [key, effect] of firstAnswers) expect(finalAnswers.get(key)).toBe(effect);
    } finally {
      await started.close();
    }
  });
});
