/** The settings of a stream the service reconciles on start; everything else is the operator's. */
export interface StreamShape {
  subjects: readonly string[];
  replicas: number;
}

/**
 * What to change on an existing stream so it serves `wanted` without undoing what an operator
 * set: subjects it lacks are added (none removed), replicas are raised to the configured count and
 * never lowered; retention, storage, limits and the duplicate window stay as they are. Undefined
 * when nothing needs changing, so a start normally sends no update at all.
 */
export function streamChanges(existing: StreamShape, wanted: StreamShape): StreamShape | undefined {
  const missing = wanted.subjects.filter((subject) => !existing.subjects.includes(subject));
  const replicas = Math.max(existing.replicas, wanted.replicas);
  if (!missing.length && replicas === existing.replicas) return undefined;
  return { subjects: [...existing.subjects, ...missing], replicas };
}
