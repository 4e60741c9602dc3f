import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from 'kubernetes-models';
import { parseAllDocuments } from 'yaml';

/**
 * Renders the kustomizations under deploy/ as `kubectl apply -k` would (kubectl's built-in
 * kustomize), and copies deploy/ to a scratch folder so that a test can write an overlay of its
 * own beside the committed ones (kustomize refuses absolute paths and, for files, paths outside
 * the kustomization's folder).
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export const kubectl = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((file) => fs.existsSync(file));
if (!kubectl) console.warn('[skip] the manifest rendering tests need kubectl (kustomize is built in)');

/** A rendered resource: any shape past its kind and name (the tests read what they check). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Field = any;
export type Resource = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; [field: string]: Field };
  [field: string]: Field;
};

/** Renders a kustomization folder: relative to the repository, or absolute (a copy). */
export function render(dir: string): Resource[] {
  const out = execFileSync(kubectl!, ['kustomize', path.resolve(ROOT, dir)], { encoding: 'utf8' });
  return parseAllDocuments(out).map((doc) => doc.toJSON() as Resource);
}

/** A scratch copy of deploy/; remove it with fs.rmSync(copy, { recursive: true }). */
export function copyOfDeploy(): string {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'deploy-'));
  fs.cpSync(path.join(ROOT, 'deploy'), copy, { recursive: true });
  return copy;
}

/** The kubernetes-models class for an apiVersion and kind (`apps/v1` Deployment → k8s.apps.v1.Deployment). */
export function modelOf(resource: Resource): (new (data: unknown) => { validate(): void }) | undefined {
  const [group, version] = resource.apiVersion.includes('/') ? resource.apiVersion.split('/') : ['', resource.apiVersion];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const models = k8s as any;
  // networking.k8s.io → networkingK8sIo; the core group ("v1") sits at the top.
  const space =
    group === ''
      ? models
      : models[
          group
            .split('.')
            .map((part, i) => (i ? part[0].toUpperCase() + part.slice(1) : part))
            .join('')
        ];
  return space?.[version]?.[resource.kind];
}
