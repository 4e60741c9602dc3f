import { describe, expect, it } from 'vitest';
import {
  blockingFolder,
  decideStart,
  isPortTaken,
  parsePostmasterPid,
  postgresArgs,
  startFailureReason,
} from '../../../platform/db/embedded-postgres.logic.js';

describe('embedded Postgres: whose data directory is it', () => {
  it('creates a cluster where none was made', () => {
    expect(decideStart({ initialised: false })).toEqual({ action: 'initialise-then-start' });
  });

  it('starts on a cluster nobody runs, a stale postmaster.pid included (Postgres removes it)', () => {
    expect(decideStart({ initialised: true })).toEqual({ action: 'start' });
    expect(
      decideStart({ initialised: true, postmasterPid: 41, postmasterAlive: false, ownerPid: 40, ownerAlive: false }),
    ).toEqual({
      action: 'start',
    });
  });

  it('refuses a cluster whose server runs for a live owner, or for an owner it cannot name', () => {
    expect(decideStart({ initialised: true, postmasterPid: 41, postmasterAlive: true, ownerPid: 40, ownerAlive: true })).toEqual({
      action: 'refuse-in-use',
      postmasterPid: 41,
      ownerPid: 40,
    });
    // A server somebody started by hand (no owner file): theirs, never ours to stop.
    expect(decideStart({ initialised: true, postmasterPid: 41, postmasterAlive: true })).toEqual({
      action: 'refuse-in-use',
      postmasterPid: 41,
      ownerPid: undefined,
    });
  });

  it('reclaims a server whose owner died without stopping it', () => {
    expect(decideStart({ initialised: true, postmasterPid: 41, postmasterAlive: true, ownerPid: 40, ownerAlive: false })).toEqual(
      {
        action: 'reclaim-orphan',
        postmasterPid: 41,
      },
    );
  });

  it("reads postmaster.pid's first line only when it is a pid", () => {
    expect(parsePostmasterPid('4242\n/data\n1700000000\n5432\n')).toBe(4242);
    expect(parsePostmasterPid('')).toBeUndefined();
    expect(parsePostmasterPid('-1\n')).toBeUndefined();
    expect(parsePostmasterPid('0\n')).toBeUndefined();
    expect(parsePostmasterPid('garbage')).toBeUndefined();
  });
});

describe('embedded Postgres: server settings and its log', () => {
  it('listens on loopback only, without a Unix socket; durable keeps fsync, throwaway drops it', () => {
    const durable = postgresArgs({ dataDir: '/d', port: 5555, durability: 'durable' });
    expect(durable.slice(0, 4)).toEqual(['-D', '/d', '-p', '5555']);
    expect(durable).toContain('listen_addresses=127.0.0.1');
    expect(durable).toContain('unix_socket_directories=');
    expect(durable.some((arg) => arg.startsWith('fsync='))).toBe(false);
    // The relay's commit-time header needs it (events/publish/committed-at.logic.ts), in both modes.
    expect(durable).toContain('track_commit_timestamp=on');
    expect(postgresArgs({ dataDir: '/d', port: 5555, durability: 'throwaway' })).toContain('track_commit_timestamp=on');
    expect(postgresArgs({ dataDir: '/d', port: 5555, durability: 'throwaway' })).toContain('fsync=off');
  });

  it('names the FATAL line of a failed start, without its timestamp and pid', () => {
    const log = [
      '2026-11-28 00:43:12.851 UTC [8453] LOG:  starting PostgreSQL 17',
      '2026-11-28 00:43:12.852 UTC [8453] FATAL:  could not create lock file "postmaster.pid": Permission denied',
    ].join('\n');
    expect(startFailureReason(log)).toBe('FATAL:  could not create lock file "postmaster.pid": Permission denied');
    expect(startFailureReason('something else\n')).toBe('something else');
    expect(startFailureReason('')).toBe('the server exited during start-up');
  });

  it('tells a lost port race from other failures', () => {
    expect(isPortTaken('LOG:  could not bind IPv4 address "127.0.0.1": Address already in use')).toBe(true);
    expect(isPortTaken('FATAL:  data directory "/d" has wrong ownership')).toBe(false);
  });
});

describe('embedded Postgres as root: can its account reach the cluster', () => {
  const account = { uid: 101, gid: 104 };
  const folder = (path: string, mode: number, uid = 0, gid = 0) => ({ path, mode, uid, gid });

  it('passes folders anyone may search, and those of its own user or group', () => {
    expect(
      blockingFolder(
        [folder('/', 0o755), folder('/work', 0o711), folder('/work/own', 0o700, 101), folder('/work/own/g', 0o750, 0, 104)],
        account,
      ),
    ).toBeUndefined();
  });

  it('names the first private folder on the way (a checkout under /root, a 0700 temporary folder)', () => {
    expect(blockingFolder([folder('/', 0o755), folder('/root', 0o700), folder('/root/app', 0o755)], account)?.path).toBe('/root');
    // Group members are judged by the group bits, not the others' bits.
    expect(blockingFolder([folder('/', 0o755), folder('/srv', 0o705, 0, 104)], account)?.path).toBe('/srv');
  });
});
