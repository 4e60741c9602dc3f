import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/ids.js';
import { startSystemProcess, type SystemProcess } from '../support/system-process.js';

const run = promisify(execFile);

interface GraphQLErrorBody {
  errors: Array<{ extensions: { code: string } }>;
}

/**
 * The new user's path of the README: the process on its embedded defaults (no AUTH_* variable, so
 * it generates and trusts the development key under DATA_DIR), a token from `npm run token`, then
 * the first query through the gateway.
 */
describe('foundation: embedded defaults, npm run token, first query', () => {
  let system: SystemProcess;
  const tenant = newId('tenant');
  const query = '{ courses(first: 5) { edges { node { courseId slug } } } }';

  beforeAll(async () => {
    system = await startSystemProcess({ AUTH_PUBLIC_KEY: undefined });
  });
  afterAll(async () => {
    expect(await system?.stop()).toBe(0);
  });

  const graphql = (headers: Record<string, string>) =>
    fetch(`${system.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ query }),
    });

  it('accepts a token minted by `npm run token` for the same DATA_DIR, and applies the tenant rule', async () => {
    const { stdout } = await run('npm', ['run', '-s', 'token', '--', '--tenant', tenant, '--scope', 'catalog.read'], {
      env: { ...process.env, DATA_DIR: system.dataDir },
    });
    const token = stdout.trim();
    expect(token.split('.')).toHaveLength(3);

    const ok = await graphql({ authorization: `Bearer ${token}`, 'x-tenant-id': tenant });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ data: { courses: { edges: [] } } });

    const otherTenant = await graphql({ authorization: `Bearer ${token}`, 'x-tenant-id': newId('tenant') });
    expect(otherTenant.status).toBe(403);
    expect(((await otherTenant.json()) as GraphQLErrorBody).errors[0].extensions.code).toBe('authz.tenant_not_a_member');

    const anonymous = await graphql({ 'x-tenant-id': tenant });
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as GraphQLErrorBody).errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });

  it('refuses a token signed by a key the process does not trust', async () => {
    const foreign = await system.mintToken(tenant, 'catalog.read');
    const response = await graphql({ authorization: `Bearer ${foreign}`, 'x-tenant-id': tenant });
    expect(response.status).toBe(401);
  });

  it('reports liveness, readiness per dependency, and the seeded phase-0 baseline', async () => {
    expect((await fetch(`${system.baseUrl}/healthz`)).status).toBe(200);
    const ready = await fetch(`${system.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    const report = (await ready.json()) as { ready: boolean; checks: Record<string, { status: string }> };
    expect(report.ready).toBe(true);
    expect(report.checks.database.status).toBe('up');
    expect(report.checks.events.status).toBe('up');

    const { stdout } = await run('npm', ['run', '-s', 'token', '--', '--tenant', tenant, '--scope', 'ai.admin'], {
      env: { ...process.env, DATA_DIR: system.dataDir },
    });
    const response = await fetch(`${system.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stdout.trim()}`, 'x-tenant-id': tenant },
      body: JSON.stringify({
        query:
          '{ routingRules { tenantId activeVersion versions { primary { provider } fallbacks { provider } } } promptTemplates { featureKey hash active } }',
      }),
    });
    const { data } = (await response.json()) as {
      data: {
        routingRules: Array<{
          tenantId: string | null;
          versions: Array<{ primary: { provider: string }; fallbacks: Array<{ provider: string }> }>;
        }>;
        promptTemplates: Array<{ featureKey: string; hash: string; active: boolean }>;
      };
    };
    const global = data.routingRules.filter((rule) => rule.tenantId === null);
    expect(global).toHaveLength(1);
    expect(global[0].versions[0].fallbacks.map((f) => f.provider)).toEqual(['mock']);
    const active = data.promptTemplates.filter((t) => t.active).map((t) => t.featureKey);
    for (const featureKey of [
      'patient_chart.note_summary',
      'portal.triage',
      'virtual_care.soap_scaffold',
      'medication.reconciliation_assist',
    ]) {
      expect(active).toContain(featureKey);
    }
    expect(data.promptTemplates.every((t) => /^sha256:[0-9a-f]{64}$/.test(t.hash))).toBe(true);
  });
});
