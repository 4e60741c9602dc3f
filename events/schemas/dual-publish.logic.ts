/** What a producer needs to know about an event type's versions to decide what to publish. */
export interface RegistryInfo {
  eventType: string;
  /** `releasedAt` is absent while a version is still being developed (not yet in released.json). */
  versions: Array<{ version: number; releasedAt?: string }>;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The versions a producer must publish now (spec, Versioning: a breaking change gets a new
 * version and both are published for the dual-publish window). A version is published while it
 * is the newest, or while its successor is unreleased or was released less than
 * `dualPublishDays` ago: consumers get the window to move to the new version.
 */
export function versionsToPublish(eventType: string, info: RegistryInfo, now: Date, dualPublishDays: number): number[] {
  const versions = [...info.versions].sort((a, b) => a.version - b.version);
  if (versions.length === 0) throw new Error(`no versions registered for ${eventType}`);
  return versions
    .filter((current, index) => {
      const successor = versions[index + 1];
      if (!successor) return true;
      if (!successor.releasedAt) return true;
      return now.getTime() - new Date(successor.releasedAt).getTime() < dualPublishDays * DAY_MS;
    })
    .map((v) => v.version);
}
