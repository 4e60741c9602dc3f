import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * Podman as this machine kind runs it (docs: shared design notes, "Containers"): no image registry
 * is reachable, so the base image is made here from Debian packages (debootstrap) and the Node 24
 * binary the `node` devDependency ships; runc rather than crun (hybrid cgroups), lowered ulimits,
 * the host network, and the machine's CA bundle mounted for npm at build time only.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

const RUNTIME = ['--runtime', '/usr/sbin/runc'];
const ULIMITS = ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:2048'];
const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
/** Podman and buildah keep scratch files in TMPDIR: not the test run's own folder, which must end empty. */
const PODMAN_ENV = { ...process.env, TMPDIR: '/var/tmp' };

const DEBIAN_IMAGE = 'localhost/debian-min:bookworm';

export function podmanAvailable(): boolean {
  const missing = ['/usr/bin/podman', '/usr/sbin/runc', '/usr/sbin/debootstrap'].filter((file) => !fs.existsSync(file));
  if (missing.length)
    console.warn(`[skip] the deployment test needs ${missing.join(', ')} (.ci/run installs podman, runc and debootstrap)`);
  return missing.length === 0;
}

export async function podman(args: string[], options: { timeoutMs?: number } = {}): Promise<string> {
  const { stdout } = await run('podman', args, {
    env: PODMAN_ENV,
    maxBuffer: 64 * 1024 * 1024,
    timeout: options.timeoutMs ?? 120_000,
  });
  return stdout.trim();
}

function imageExists(name: string): boolean {
  return spawnSync('podman', ['image', 'exists', name], { env: PODMAN_ENV }).status === 0;
}

function debianMirror(): string {
  const sources = fs.readFileSync('/etc/apt/sources.list.d/debian.sources', 'utf8');
  return /^URIs:\s*(\S+)/m.exec(sources)?.[1] ?? 'http://deb.debian.org/debian';
}

/**
 * The local stand-in for the official Node 24 image: Debian bookworm (minbase) with this project's
 * pinned Node binary and the machine's npm. Made once and kept in podman's store (the debootstrap
 * alone takes minutes); its tag names the Node version, so a new pin makes a new base.
 */
export async function ensureBaseImage(): Promise<string> {
  const nodeBinary = path.join(ROOT, 'node_modules/node/bin/node');
  const version = spawnSync(nodeBinary, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const tag = `localhost/catalog-ai-base:node-${version}`;
  if (imageExists(tag)) return tag;
  const work = fs.mkdtempSync(path.join('/var/tmp', 'catalog-ai-base-'));
  try {
    if (!imageExists(DEBIAN_IMAGE)) {
      const rootfs = path.join(work, 'rootfs');
      await run('debootstrap', ['--variant=minbase', 'bookworm', rootfs, debianMirror()], { timeout: 30 * 60_000 });
      await run('sh', ['-c', `tar -C "${rootfs}" -c . | podman import - ${DEBIAN_IMAGE}`], {
        env: PODMAN_ENV,
        timeout: 10 * 60_000,
      });
      fs.rmSync(rootfs, { recursive: true, force: true });
    }
    const context = path.join(work, 'context');
    fs.mkdirSync(context);
    fs.copyFileSync(nodeBinary, path.join(context, 'node'));
    fs.cpSync(npmDirectory(), path.join(context, 'npm'), { recursive: true });
    fs.writeFileSync(
      path.join(context, 'Containerfile'),
      [
        `FROM ${DEBIAN_IMAGE}`,
        'COPY node /usr/local/bin/node',
        'COPY npm /usr/local/lib/node_modules/npm',
        'RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && node --version && npm --version',
      ].join('\n'),
    );
    await podman(['build', ...RUNTIME, ...ULIMITS, '--network', 'host', '-t', tag, context], { timeoutMs: 10 * 60_000 });
    return tag;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** The npm that runs this process's `npm` command (the machine's). */
function npmDirectory(): string {
  const cli = fs.realpathSync(spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim());
  return path.resolve(path.dirname(cli), '..');
}

/** `docker build .` as a user runs it, on the local base image: the committed Dockerfile, unchanged. */
export async function buildImage(tag: string, baseImage: string): Promise<void> {
  await podman(
    [
      'build',
      ...RUNTIME,
      ...ULIMITS,
      '--network',
      'host',
      // Docker's format keeps the HEALTHCHECK (OCI images have no such field).
      '--format',
      'docker',
      '-v',
      `${CA_BUNDLE}:${CA_BUNDLE}:ro`,
      '--build-arg',
      `NODE_IMAGE=${baseImage}`,
      '--build-arg',
      `NODE_EXTRA_CA_CERTS=${CA_BUNDLE}`,
      '-t',
      tag,
      ROOT,
    ],
    { timeoutMs: 45 * 60_000 },
  );
}

export interface Container {
  name: string;
  /** Sends a signal (SIGTERM for a drain) and resolves with the exit code. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<number>;
  logs(): Promise<string>;
}

/** One container of the image on the host network, detached. */
export async function runContainer(
  image: string,
  name: string,
  command: string[],
  env: Record<string, string | undefined>,
): Promise<Container> {
  const envArgs = Object.entries(env).flatMap(([key, value]) => (value === undefined ? [] : ['-e', `${key}=${value}`]));
  await podman(['run', '-d', ...RUNTIME, ...ULIMITS, '--network', 'host', '--name', name, ...envArgs, image, ...command]);
  return {
    name,
    async stop(signal = 'SIGTERM') {
      await podman(['kill', '--signal', signal, name]).catch(() => undefined);
      return Number(await podman(['wait', name], { timeoutMs: 120_000 }));
    },
    logs: () => podman(['logs', name]).catch((error: Error) => error.message),
  };
}

/** Runs a container to its end: its exit code and output. `entrypoint` replaces the image's. */
export async function runToEnd(
  image: string,
  command: string[],
  env: Record<string, string | undefined>,
  options: { entrypoint?: string } = {},
): Promise<{ code: number; output: string }> {
  const envArgs = Object.entries(env).flatMap(([key, value]) => (value === undefined ? [] : ['-e', `${key}=${value}`]));
  const entrypoint = options.entrypoint ? ['--entrypoint', options.entrypoint] : [];
  try {
    const output = await podman(
      ['run', '--rm', ...RUNTIME, ...ULIMITS, '--network', 'host', ...entrypoint, ...envArgs, image, ...command],
      {
        timeoutMs: 5 * 60_000,
      },
    );
    return { code: 0, output };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : 1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

export async function removeContainers(names: string[]): Promise<void> {
  if (names.length) await podman(['rm', '-f', ...names]).catch(() => undefined);
}
