import fs from 'node:fs';

/** Alive and not a zombie waiting to be reaped (Linux /proc). */
export function alive(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}
