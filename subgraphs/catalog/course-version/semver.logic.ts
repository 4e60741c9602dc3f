import { badInput } from '../../../platform/errors/errors.js';

export interface VersionNumber {
  major: number;
  minor: number;
  patch: number;
}

// No leading zeros: "01.2.3" and "1.2.3" would otherwise be two labels of one version.
const LABEL = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;
/** The parts are stored in Postgres integer columns. */
const MAX_PART = 2_147_483_647;

export function parseVersionLabel(label: string): VersionNumber {
  const match = LABEL.exec(label);
  if (!match) {
    throw badInput(`versionLabel "${label}" is not major.minor.patch (non-negative integers, no leading zeros)`, {
      field: 'versionLabel',
    });
  }
  const [major, minor, patch] = match.slice(1).map(Number);
  if ([major, minor, patch].some((part) => part > MAX_PART)) {
    throw badInput(`versionLabel "${label}" has a part above ${MAX_PART}`, { field: 'versionLabel' });
  }
  return { major, minor, patch };
}

export function compareVersions(a: VersionNumber, b: VersionNumber): -1 | 0 | 1 {
  const order = a.major - b.major || a.minor - b.minor || a.patch - b.patch;
  return order < 0 ? -1 : order > 0 ? 1 : 0;
}

/**
 * A version becomes the course's latest iff its label is greater than the current latest label,
 * whatever the order of arrival: 1.2.0 published after 1.3.0 is stored, but 1.3.0 stays latest.
 */
export function decideBecameLatest(currentLatest: string | null | undefined, candidate: string): boolean {
  if (!currentLatest) return true;
  return compareVersions(parseVersionLabel(candidate), parseVersionLabel(currentLatest)) > 0;
}
