import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { kubectl, modelOf, render } from '../../support/kustomize.js';

/**
 * The Kubernetes manifests under deploy/ as `kubectl kustomize` renders them (the base and the
 * example overlay), each resource validated against the Kubernetes OpenAPI schema of its kind
 * (kubernetes-models), and the rules a platform team relies on checked one by one. The compose
 * file beside them is checked for the same image and the migration-first order.
 */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

const DRAIN_SECONDS = 5 + 5 + 25; // preStop + SHUTDOWN_DRAIN_MS + SHUTDOWN_TIMEOUT_MS

describe.runIf(kubectl).each(['deploy/base', 'deploy/overlays/example'])('Kubernetes manifests: %s', (dir) => {
  const resources = kubectl ? render(dir) : [];
  const byKind = (kind: string) => resources.filter((r) => r.kind === kind);
  const deployments = byKind('Deployment');

  it('renders, and every resource is valid against the Kubernetes schema of its kind', () => {
    expect(resources.length).toBeGreaterThan(10);
    for (const resource of resources) {
      const Model = modelOf(resource);
      expect(Model, `${resource.apiVersion} ${resource.kind}`).toBeDefined();
      expect(() => new Model!(resource).validate(), `${resource.kind}/${resource.metadata.name}`).not.toThrow();
    }
  });

  it('runs every part as its own Deployment of the one image, with a Service and a PodDisruptionBudget', () => {
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(['ai', 'catalog', 'gateway', 'worker']);
    const images = new Set(deployments.flatMap((d) => d.spec.template.spec.containers.map((c: { image: string }) => c.image)));
    expect(images.size).toBe(1);
    for (const d of deployments) {
      expect(d.spec.template.spec.containers[0].args).toEqual([d.metadata.name]);
      expect(byKind('Service').some((s) => s.metadata.name === d.metadata.name)).toBe(true);
      const pdb = byKind('PodDisruptionBudget').find((p) => p.metadata.name === d.metadata.name);
      expect(pdb?.spec.minAvailable).toBe(1);
      expect(d.spec.replicas).toBeGreaterThanOrEqual(2);
    }
  });

  it('probes readiness and liveness, requests resources, drains on stop and runs without root', () => {
    for (const d of deployments) {
      const pod = d.spec.template.spec;
      const [container] = pod.containers;
      expect(container.readinessProbe.httpGet.path, d.metadata.name).toBe('/readyz');
      expect(container.livenessProbe.httpGet.path).toBe('/healthz');
      expect(container.resources.requests.cpu).toBeDefined();
      expect(container.resources.requests.memory).toBeDefined();
      expect(container.lifecycle.preStop).toBeDefined();
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(DRAIN_SECONDS);
      expect(pod.securityContext.runAsNonRoot).toBe(true);
      expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
      expect(d.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
    }
  });

  it('waits for the migration Job: the Job runs `migrate`, every Deployment an init container `schema-ready`', () => {
    const [job] = byKind('Job');
    expect(job.spec.template.spec.containers[0].args).toEqual(['migrate']);
    for (const d of deployments) expect(d.spec.template.spec.initContainers[0].args).toEqual(['schema-ready']);
  });

  it("runs every pod as the system's own ServiceAccount, with no API token mounted", () => {
    const [account] = byKind('ServiceAccount');
    expect(account.metadata.name).toBe('catalog-ai');
    expect(account.automountServiceAccountToken).toBe(false);
    const pods = [...deployments, ...byKind('Job')];
    expect(pods).toHaveLength(5);
    for (const workload of pods) {
      expect(workload.spec.template.spec, workload.metadata.name).toMatchObject({
        serviceAccountName: 'catalog-ai',
        automountServiceAccountToken: false,
      });
    }
  });

  it('takes configuration from a ConfigMap and secrets from a Secret it never commits', () => {
    expect(byKind('Secret')).toEqual([]);
    const [config] = byKind('ConfigMap');
    expect(config.data).toMatchObject({ NODE_ENV: 'production', HOST: '0.0.0.0' });
    for (const d of deployments) {
      const env = d.spec.template.spec.containers[0].env as Array<{ name: string; value?: string; valueFrom?: unknown }>;
      expect(env.find((e) => e.name === 'DATABASE_URL')?.valueFrom).toMatchObject({
        secretKeyRef: { name: 'catalog-ai-secrets' },
      });
      // Nothing that looks like a credential is a literal value.
      for (const e of env) expect(e.value, e.name).toBeUndefined();
    }
  });

  it('keeps the subgraph ports and the ops port (/metrics, probes) private with NetworkPolicies', () => {
    const policies = byKind('NetworkPolicy');
    const deny = policies.find((p) => p.spec.podSelector.matchLabels?.['app.kubernetes.io/part-of'] && !p.spec.ingress);
    expect(deny, 'a default deny of ingress').toBeDefined();
    const subgraphs = policies.find((p) => p.metadata.name === 'subgraphs-from-gateway-only')!;
    expect(subgraphs.spec.ingress[0].from).toEqual([{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'gateway' } } }]);
    const ops = policies.find((p) =>
      p.spec.ingress?.some((rule: { ports: Array<{ port: number }> }) => rule.ports[0].port === 9464),
    )!;
    expect(ops.spec.ingress[0].from[0].namespaceSelector).toBeDefined();
    // Only the gateway's public port is open to every client.
    const open = policies.filter((p) => p.spec.ingress?.some((rule: { from?: unknown }) => !rule.from));
    expect(open.map((p) => p.metadata.name)).toEqual(['gateway-public']);
    expect(open[0].spec.ingress[0].ports).toEqual([{ port: 4000, protocol: 'TCP' }]);
  });
});

describe('the compose file', () => {
  // Merge keys (`<<: *part`) are YAML 1.1, which compose reads.
  const compose = parse(fs.readFileSync(path.join(ROOT, 'deploy/compose.yaml'), 'utf8'), { merge: true });

  it('runs every part of the one image after the migration, on real Postgres, Redis and NATS', () => {
    const parts = ['gateway', 'catalog', 'ai', 'worker'];
    const image = compose.services.migrate.image;
    for (const part of parts) {
      const service = compose.services[part];
      expect(service.image, part).toBe(image);
      expect(service.command).toEqual([part]);
      expect(service.depends_on.migrate).toEqual({ condition: 'service_completed_successfully' });
      expect(service.environment).toMatchObject({ NODE_ENV: 'production', DATABASE_URL: expect.stringMatching(/^postgresql:/) });
    }
    expect(compose.services.migrate.command).toEqual(['migrate']);
    // The state Redis never evicts; the cache Redis may.
    expect(compose.services.redis.command.join(' ')).toContain('--maxmemory-policy noeviction');
    expect(compose.services['redis-cache'].command.join(' ')).toContain('allkeys-lru');
  });
});
