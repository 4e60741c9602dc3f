import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { FIXED_PORT_FLOOR, freePort, listeningPortRange, parseEphemeralRange } from '../../../platform/free-port.js';

describe('freePort', () => {
  it('draws below the kernel ephemeral range, where no outgoing connection can hold the port', async () => {
    const range = listeningPortRange([32_768, 60_999]);
    expect(range).toEqual([FIXED_PORT_FLOOR, 32_767]);
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) expect(port).toBeLessThan(32_768);
  });

  it('lets the OS choose when the room below the ephemeral range is too small', () => {
    expect(listeningPortRange([20_500, 60_999])).toBeUndefined();
    expect(listeningPortRange(undefined)).toEqual([FIXED_PORT_FLOOR, 32_767]);
  });

  it('parses the kernel range and rejects nonsense', () => {
    expect(parseEphemeralRange('32768\t60999\n')).toEqual([32_768, 60_999]);
    expect(parseEphemeralRange('')).toBeUndefined();
    expect(parseEphemeralRange('9 3')).toBeUndefined();
  });

  it('returns a port a server can listen on', async () => {
    const port = await freePort();
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
