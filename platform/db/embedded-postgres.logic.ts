/**
 * Decisions of the embedded Postgres launcher (platform/db/embedded-postgres.ts), as plain data in
 * and out, so the rules about a data directory someone else may hold are testable without processes.
 */

/** What a data directory holds when the launcher looks at it. */
export interface ClusterDirState {
  /** PG_VERSION exists: initdb finished here once. */
  initialised: boolean;
  /** The first line of postmaster.pid (the postmaster's pid), when the file exists. */
  postmasterPid?: number;
  /** Whether that pid is a live process. */
  postmasterAlive?: boolean;
  /** The pid of the process that started that postmaster (our owner file), when recorded. */
  ownerPid?: number;
  /** Whether that owner is a live process. */
  ownerAlive?: boolean;
}

export type StartDecision =
  | { action: 'initialise-then-start' }
  | { action: 'start' }
  /** A postmaster left behind by an owner that died without stopping it: stop it, then start ours. */
  | { action: 'reclaim-orphan'; postmasterPid: number }
  | { action: 'refuse-in-use'; postmasterPid: number; ownerPid?: number };

/**
 * A live postmaster on the directory belongs to another running process (a second `npm start` on
 * the same DATA_DIR, or a tool): refuse, never share or corrupt. A live postmaster whose recorded
 * owner is dead is an orphan of a killed process on a system without a parent-death signal: ours
 * to stop. A stale postmaster.pid (its process gone) is Postgres's own to clean up.
 */
export function decideStart(state: ClusterDirState): StartDecision {
  if (!state.initialised) return { action: 'initialise-then-start' };
  if (state.postmasterPid === undefined || !state.postmasterAlive) return { action: 'start' };
  if (state.ownerPid !== undefined && state.ownerAlive === false) {
    return { action: 'reclaim-orphan', postmasterPid: state.postmasterPid };
  }
  return { action: 'refuse-in-use', postmasterPid: state.postmasterPid, ownerPid: state.ownerPid };
}

/** The pid on postmaster.pid's first line, or undefined for an empty or garbled file. */
export function parsePostmasterPid(text: string): number | undefined {
  const first = text.split('\n')[0]?.trim() ?? '';
  if (!/^\d+$/.test(first)) return undefined;
  const pid = Number(first);
  return pid > 0 ? pid : undefined;
}

export type Durability = 'durable' | 'throwaway';

/**
 * The server's settings. `durable` (npm start's DATA_DIR) keeps Postgres's defaults: data survives
 * a crash. `throwaway` (a test run's cluster, deleted after the run) trades crash safety for speed.
 * Never a Unix socket: its default directory may not exist or be shared with another Postgres.
 */
export function postgresArgs(options: { dataDir: string; port: number; durability: Durability }): string[] {
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    max_connections: '200',
    // The catalog relay LISTENs and the ordering guard takes advisory locks: as on a real server.
    log_min_messages: 'warning',
    log_line_prefix: '%m [%p] ',
    // The outbox relay stamps each event with its commit time (events/publish/committed-at.logic.ts),
    // so the response cache's lag is measured from the commit, as its objective is stated.
    track_commit_timestamp: 'on',
  };
  if (options.durability === 'throwaway') {
    Object.assign(settings, { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' });
  }
  const flags = Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
  return ['-D', options.dataDir, '-p', String(options.port), ...flags];
}

/** initdb's arguments: UTF-8 in the C locale (present everywhere), password auth over TCP. */
export function initdbArgs(options: { dataDir: string; user: string; passwordFile: string }): string[] {
  return [
    `--pgdata=${options.dataDir}`,
    `--username=${options.user}`,
    `--pwfile=${options.passwordFile}`,
    '--auth-host=scram-sha-256',
    '--auth-local=scram-sha-256',
    '--encoding=UTF8',
    '--locale=C',
    // Its files are fsynced by the server's first checkpoint; a crash during initdb leaves a
    // temporary directory that the next start replaces.
    '--no-sync',
  ];
}

/** What the server's log says when it could not start, reduced to a sentence for one line. */
export function startFailureReason(log: string): string {
  const fatal = log
    .split('\n')
    .map((line) => line.replace(/^\S+ \S+ \S+ \[\d+\] /, '').trim())
    .find((line) => /^(FATAL|PANIC|ERROR):/.test(line));
  return fatal ?? (log.trim().split('\n').pop() || 'the server exited during start-up');
}

/** The server lost the race for its port to another process: pick another port and start again. */
export function isPortTaken(log: string): boolean {
  return /could not bind IPv4 address|Address already in use|could not create any TCP\/IP sockets/.test(log);
}

/** A folder on the way to the cluster, as stat(2) gives it. */
export interface FolderFacts {
  path: string;
  mode: number;
  uid: number;
  gid: number;
}

/**
 * The first folder the server's account cannot pass through (no search permission for it), or
 * undefined when it reaches the cluster. As root the server runs as another account, and a
 * checkout under a private folder (/root, a 0700 temporary folder) is out of its reach.
 */
export function blockingFolder(chain: FolderFacts[], account: { uid: number; gid: number }): FolderFacts | undefined {
  return chain.find((folder) => {
    if (folder.uid === account.uid) return (folder.mode & 0o100) === 0;
    if (folder.gid === account.gid) return (folder.mode & 0o010) === 0;
    return (folder.mode & 0o001) === 0;
  });
}
