import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * Ports handed out below the kernel's ephemeral range. A port from `listen(0)` lies inside that
 * range, so after its process dies the kernel may give it to any outgoing connection as a source
 * port, and a restart on the same port fails with EADDRINUSE (seen in CI: a replica restarted
 * after SIGKILL). Below the range only a listener can hold a port.
 */
export const FIXED_PORT_FLOOR = 20_000;

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

/** A loopback port that was free a moment ago (another process may still take it first). */
export async function freePort(): Promise<number> {
  const range = listeningPortRange(ephemeralRange());
  for (let attempt = 0; range && attempt < 50; attempt += 1) {
    const candidate = range[0] + Math.floor(Math.random() * (range[1] - range[0] + 1));
    const port = await tryListen(candidate);
    if (port !== undefined) return port;
  }
  const port = await tryListen(0);
  if (port === undefined) throw new Error('no free loopback port');
  return port;
}
