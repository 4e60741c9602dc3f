import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * Ports handed out below the kernel's ephemeral range. A port from `listen(0)` lies inside that
 * range, so after its process dies the kernel may give it to any outgoing connection as a source
 * port, and a restart on the same port fails with EADDRINUSE (seen in CI: a replica restarted
 * after SIGKILL). Below the range only a listener can hold a port.
 */
export const FIXED_PORT_FLOOR = 20_000;

/**
 * How long a handed-out port stays reserved for the process it was given to. A port is free in the
 * kernel from the moment freePort() probes it until its new owner listens, which for a process
 * booting on a loaded machine is seconds; a reservation older than this is taken back.
 */
export const RESERVATION_TTL_MS = 15 * 60_000;

/** The [low, high] range to draw from, or undefined to let the OS choose (range too small). */
export function listeningPortRange(ephemeral: readonly [number, number] | undefined): [number, number] | undefined {
  const ephemeralLow = ephemeral?.[0] ?? 32_768;
  const high = ephemeralLow - 1;
  return high - FIXED_PORT_FLOOR >= 1_000 ? [FIXED_PORT_FLOOR, high] : undefined;
}

/** Parses /proc/sys/net/ipv4/ip_local_port_range ("32768\t60999"). */
export function parseEphemeralRange(text: string): [number, number] | undefined {
  const [low, high] = text.trim().split(/\s+/).map(Number);
  return Number.isInteger(low) && Number.isInteger(high) && low > 0 && low <= high ? [low, high] : undefined;
}

function ephemeralRange(): [number, number] | undefined {
  try {
    return parseEphemeralRange(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8'));
  } catch {
    return undefined; // not Linux: assume the IANA range (49152+) or Linux's default, both above the floor
  }
}

function tryListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as net.AddressInfo;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * Where handed-out ports are recorded, one empty file per port, shared by every process with the
 * same TMPDIR (a test run's processes share the run's). Probing a port cannot tell a port nobody
 * wants from one just handed to a process that is still booting: two parts of one test run were
 * given the same port, and a test's requests went to another test's process (CI, issue #32).
 */
export function defaultReservationsDir(): string {
  return path.join(os.tmpdir(), 'port-reservations');
}

/**
 * Claims `port` for this process: true when no other claim younger than the TTL holds it. The
 * claim is an exclusive create, atomic across processes; an expired claim is removed and retried.
 */
export function reservePort(dir: string, port: number, now = Date.now()): boolean {
  const file = path.join(dir, String(port));
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      closeSync(openSync(file, 'wx'));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return true; // no registry here: probing alone decides
    }
    try {
      if (now - statSync(file).mtimeMs < RESERVATION_TTL_MS) return false;
      unlinkSync(file);
    } catch {
      // Taken back by another process meanwhile: try the exclusive create again.
    }
  }
  return false;
}

export interface FreePortOptions {
  /** The range to draw from; default: below the kernel's ephemeral range. */
  range?: [number, number] | undefined;
  /** The reservation registry; default: defaultReservationsDir(). */
  reservationsDir?: string;
}

/**
 * A loopback port that is free now and that no other caller sharing the registry was handed within
 * the reservation TTL (it may still be taken by a process outside the registry).
 */
export async function freePort(options: FreePortOptions = {}): Promise<number> {
  const range = 'range' in options ? options.range : listeningPortRange(ephemeralRange());
  const dir = options.reservationsDir ?? defaultReservationsDir();
  try {
    mkdirSync(dir, { recursive: true });
  } catch {
    // A read-only TMPDIR: reservePort then lets probing decide alone.
  }
  const size = range ? range[1] - range[0] + 1 : 0;
  for (let attempt = 0; range && attempt < Math.min(50, size * 4); attempt += 1) {
    const candidate = range[0] + Math.floor(Math.random() * size);
    if (!reservePort(dir, candidate)) continue;
    const port = await tryListen(candidate);
    if (port !== undefined) return port;
  }
  const port = await tryListen(0);
  if (port === undefined) throw new Error('no free loopback port');
  return port;
}
