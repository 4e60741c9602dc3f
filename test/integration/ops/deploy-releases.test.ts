import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { copyOfDeploy, kubectl, modelOf, render, type Resource } from '../../support/kustomize.js';

/**
 * Releases without manual steps (issue #34): successive releases of the example overlay, rendered
 * as `kubectl apply -k` renders them, never change an immutable field under a name that already
 * exists (the migration Job is named per release); the gateway's HorizontalPodAutoscaler is an
 * opt-in component; /admin/v1 is routed by an internal Ingress only.
 */

/**
 * What the API server refuses to change on an existing object, for the kinds deploy/ renders:
 * a Job's selector and pod template, a Deployment's selector, a Service's cluster IP, the data of
 * a ConfigMap or Secret marked immutable. Other fields of these kinds may change in place.
 */
const IMMUTABLE: Record<string, (resource: Resource) => unknown> = {
  Job: (job) => ({ selector: job.spec.selector, template: job.spec.template, completionMode: job.spec.completionMode }),
  Deployment: (deployment) => deployment.spec.selector,
  StatefulSet: (set) => ({ selector: set.spec.selector, serviceName: set.spec.serviceName }),
  Service: (service) => service.spec.clusterIP,
  ConfigMap: (map) => (map.immutable ? { data: map.data, binaryData: map.binaryData } : undefined),
  Secret: (secret) => (secret.immutable ? { data: secret.data, type: secret.type } : undefined),
};

/** `Kind/name` of every resource of `next` that exists in `previous` with an immutable field changed. */
function immutableChanges(previous: Resource[], next: Resource[]): string[] {
  return next.flatMap((resource) => {
    const fields = IMMUTABLE[resource.kind];
    const old = previous.find((r) => r.kind === resource.kind && r.metadata.name === resource.metadata.name);
    if (!fields || !old) return [];
    return JSON.stringify(fields(old)) === JSON.stringify(fields(resource)) ? [] : [`${resource.kind}/${resource.metadata.name}`];
  });
}

interface Release {
  tag: string;
  /** KEY=value lines merged into the overlay's catalog-ai-config. */
  config?: string[];
}

describe.runIf(kubectl)('releases of deploy/overlays/example', () => {
  const copy = kubectl ? copyOfDeploy() : '';
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  /** Edits the copy's overlay as an operator does for a release (image tag, configuration), and renders it. */
  function release({ tag, config = [] }: Release): Resource[] {
    const file = path.join(copy, 'overlays/example/kustomization.yaml');
    const committed = fs.readFileSync(file, 'utf8');
    const kustomization = parse(committed);
    kustomization.images[0].newTag = tag;
    kustomization.configMapGenerator[0].literals.push(...config);
    try {
      fs.writeFileSync(file, stringify(kustomization));
      return render(path.join(copy, 'overlays/example'));
    } finally {
      fs.writeFileSync(file, committed);
    }
  }
  const jobName = (resources: Resource[]) => resources.filter((r) => r.kind === 'Job').map((job) => job.metadata.name);

  it('names the migration Job per release, so no release changes an immutable field of an existing object', () => {
    const releases = [
      release({ tag: '0.1.0' }),
      release({ tag: '0.2.0' }),
      release({ tag: '0.2.0', config: ['LOG_LEVEL=debug'] }),
      release({ tag: '0.3.0', config: ['LOG_LEVEL=debug'] }),
    ];
    for (let i = 1; i < releases.length; i++) {
      expect(immutableChanges(releases[i - 1], releases[i]), `release ${i}`).toEqual([]);
    }
    const names = releases.map(jobName);
    for (const name of names) expect(name).toEqual([expect.stringMatching(/^catalog-ai-migrate-[a-z0-9]{10}$/)]);
    // A new image and a new configuration each make a new Job (and so a new migration run).
    expect(new Set(names.flat()).size).toBe(releases.length);
  });

  it('gives the same release the same Job, so applying it again changes nothing and migrates once', () => {
    const first = release({ tag: '0.2.0', config: ['LOG_LEVEL=debug'] });
    const again = release({ tag: '0.2.0', config: ['LOG_LEVEL=debug'] });
    expect(jobName(again)).toEqual(jobName(first));
    expect(again).toEqual(first);
  });

  it('hashes the image and every configuration key the Job runs with', () => {
    const resources = release({ tag: '0.2.0', config: ['LOG_LEVEL=debug'] });
    const [job] = resources.filter((r) => r.kind === 'Job');
    const carrier = resources.find((r) => r.kind === 'ConfigMap' && r.metadata.name === job.metadata.name)!;
    const config = resources.find((r) => r.kind === 'ConfigMap' && r.metadata.name.startsWith('catalog-ai-config-'))!;
    const image = job.spec.template.spec.containers[0].image;
    expect(image).toBe('registry.example.org/learning/catalog-ai:0.2.0');
    expect(carrier.data).toEqual({ ...config.data, RELEASE_IMAGE: image });
    expect(job.spec.template.spec.containers[0].envFrom).toEqual([{ configMapRef: { name: config.metadata.name } }]);
  });
});

describe.runIf(kubectl)('the opt-in gateway autoscaler (deploy/components/gateway-autoscaling)', () => {
  const copy = kubectl ? copyOfDeploy() : '';
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  function withComponent(): Resource[] {
    const overlay = path.join(copy, 'overlays/autoscaled');
    fs.mkdirSync(overlay, { recursive: true });
    fs.writeFileSync(
      path.join(overlay, 'kustomization.yaml'),
      stringify({ resources: ['../../base'], components: ['../../components/gateway-autoscaling'] }),
    );
    return render(overlay);
  }

  it('is off unless an overlay enables it', () => {
    for (const dir of ['deploy/base', 'deploy/overlays/example']) {
      expect(
        render(dir).filter((r) => r.kind === 'HorizontalPodAutoscaler'),
        dir,
      ).toEqual([]);
    }
  });

  it('scales the gateway Deployment on CPU from 2 replicas, and leaves the replica count to the HPA', () => {
    const resources = withComponent();
    const [hpa] = resources.filter((r) => r.kind === 'HorizontalPodAutoscaler');
    expect(() => new (modelOf(hpa)!)(hpa).validate()).not.toThrow();
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'gateway' });
    // Above the PodDisruptionBudget's minAvailable, so a node drain never stops the last gateway.
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    expect(hpa.spec.metrics).toEqual([
      { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: expect.any(Number) } } },
    ]);
    const deployments = resources.filter((r) => r.kind === 'Deployment');
    const gateway = deployments.find((d) => d.metadata.name === 'gateway')!;
    // A utilization target needs a CPU request; an apply must not reset the HPA's count.
    expect(gateway.spec.template.spec.containers[0].resources.requests.cpu).toBeDefined();
    expect(gateway.spec).not.toHaveProperty('replicas');
    for (const other of deployments.filter((d) => d !== gateway)) expect(other.spec.replicas, other.metadata.name).toBe(2);
  });
});

describe.runIf(kubectl)('the admin door (/admin/v1)', () => {
  const ingresses = kubectl ? render('deploy/overlays/example').filter((r) => r.kind === 'Ingress') : [];
  type IngressPath = { path: string; pathType: string };
  const pathsOf = (ingress: Resource): IngressPath[] =>
    ingress.spec.rules.flatMap((rule: { http: { paths: IngressPath[] } }) => rule.http.paths);
  const routes = (ingress: Resource, url: string) =>
    pathsOf(ingress).some((p) =>
      p.pathType === 'Exact' ? p.path === url : url === p.path || url.startsWith(`${p.path.replace(/\/$/, '')}/`),
    );

  it('is not routed by the public Ingress', () => {
    const publicIngress = ingresses.find((i) => i.metadata.name === 'gateway')!;
    expect(routes(publicIngress, '/graphql')).toBe(true);
    expect(routes(publicIngress, '/admin/v1/catalog/dlq/replay')).toBe(false);
  });

  it('is routed, alone, by an internal Ingress of another class and host', () => {
    const publicIngress = ingresses.find((i) => i.metadata.name === 'gateway')!;
    const internal = ingresses.find((i) => i.metadata.name === 'gateway-internal')!;
    expect(pathsOf(internal).map((p) => p.path)).toEqual(['/admin/v1']);
    expect(routes(internal, '/admin/v1/catalog/dlq/replay')).toBe(true);
    expect(internal.spec.ingressClassName).not.toBe(publicIngress.spec.ingressClassName);
    expect(internal.spec.rules[0].host).not.toBe(publicIngress.spec.rules[0].host);
  });
});
