import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  FIXED_PORT_FLOOR,
  RESERVATION_TTL_MS,
  freePort,
  listeningPortRange,
  parseEphemeralRange,
  reservePort,
} from '../../../platform/free-port.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

describe('freePort', () => {
  let reservationsDir: string;
  beforeEach(() => {
    reservationsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'port-registry-'));
  });
  afterEach(() => fs.rmSync(reservationsDir, { recursive: true, force: true }));

  it('draws below the kernel ephemeral range, where no outgoing connection can hold the port', async () => {
    const range = listeningPortRange([32_768, 60_999]);
    expect(range).toEqual([FIXED_PORT_FLOOR, 32_767]);
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort({ reservationsDir })));
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
    const port = await freePort({ reservationsDir });
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });

  // A port is free in the kernel until its new owner listens; probing alone handed one port to two
  // booting processes of one test run (CI, issue #32).
  it('never hands out a port twice while its reservation holds, though nothing listens on it yet', async () => {
    const low = await freePort({ reservationsDir });
    const range: [number, number] = [low, low];
    // The one port of the range is free in the kernel, but handed out: the next caller gets another.
    const second = await freePort({ range, reservationsDir });
    expect(second).not.toBe(low);
    expect(second).toBeGreaterThan(0);
  });

  it('hands out distinct ports to callers one after another, none of which listens yet', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 300; i += 1) ports.push(await freePort({ reservationsDir }));
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('hands out distinct ports to processes sharing one registry (a test run shares its TMPDIR)', async () => {
    const pick = `
      import { freePort } from './platform/free-port.ts';
      const ports = [];
      for (let i = 0; i < 150; i++) ports.push(await freePort({ reservationsDir: process.argv[1] }));
      console.log(JSON.stringify(ports));`;
    const run = () =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', pick, reservationsDir], {
        cwd: ROOT,
      });
    const outputs = await Promise.all([run(), run(), run()]);
    const ports = outputs.flatMap(({ stdout }) => JSON.parse(stdout) as number[]);
    expect(ports).toHaveLength(450);
    expect(new Set(ports).size).toBe(450);
  });

  it('takes back a reservation older than its TTL, and keeps a fresh one', () => {
    expect(reservePort(reservationsDir, 25_001)).toBe(true);
    expect(reservePort(reservationsDir, 25_001)).toBe(false);
    expect(reservePort(reservationsDir, 25_001, Date.now() + RESERVATION_TTL_MS + 1_000)).toBe(true);
    expect(reservePort(reservationsDir, 25_001)).toBe(false);
  });

  it('probes alone where no registry can be kept', () => {
    expect(reservePort(path.join(reservationsDir, 'missing', 'deeper'), 25_002)).toBe(true);
  });
});
