/**
 * The DLQ alert rule (spec: alert when DLQ depth is above 0 for more than 10 minutes), judged from
 * the DLQ stream itself: the DLQ has been non-empty for longer than the limit exactly when its
 * oldest letter is older than the limit. Every replica reads the same stream, so every replica
 * (and a replica that just restarted) comes to the same verdict; nothing is remembered in memory
 * but the last sample, which only decides whether this process saw the verdict change (and logs
 * it): a process's first sample is no change, so a restart does not announce the alert again.
 */
export interface DeadLetterSample {
  depth: number;
  /** When the oldest letter still in the DLQ was stored; undefined when the DLQ is empty. */
  oldestAt?: Date;
}

export interface DeadLetterAlertState {
  depth: number;
  /** The oldest letter's storage time (ISO); undefined while the DLQ is empty. */
  oldestLetterAt?: string;
  /** Its age when sampled; 0 while the DLQ is empty. */
  oldestLetterAgeSeconds: number;
  alerting: boolean;
}

export const initialDeadLetterAlertState: DeadLetterAlertState = { depth: 0, oldestLetterAgeSeconds: 0, alerting: false };

/** Seconds since `oldestAt` (never negative: a broker clock a little ahead is not a future letter). */
export function oldestLetterAgeSeconds(oldestAt: Date | undefined, now: Date): number {
  return oldestAt ? Math.max(0, (now.getTime() - oldestAt.getTime()) / 1000) : 0;
}

export function nextDeadLetterAlertState(
  previous: DeadLetterAlertState | undefined,
  sample: DeadLetterSample,
  now: Date,
  alertAfterMs: number,
): { state: DeadLetterAlertState; transition?: 'raised' | 'cleared' } {
  const empty = sample.depth <= 0 || !sample.oldestAt;
  const age = empty ? 0 : oldestLetterAgeSeconds(sample.oldestAt, now);
  const state: DeadLetterAlertState = empty
    ? initialDeadLetterAlertState
    : {
        depth: sample.depth,
        oldestLetterAt: sample.oldestAt!.toISOString(),
        oldestLetterAgeSeconds: age,
        alerting: age * 1000 > alertAfterMs,
      };
  const transition = !previous || state.alerting === previous.alerting ? undefined : state.alerting ? 'raised' : 'cleared';
  return { state, transition };
}
