/**
 * The DLQ alert rule (spec: alert when DLQ depth is above 0 for more than 10 minutes) as a state
 * machine over depth samples: raise once when the depth has stayed non-zero past the limit, clear
 * when it is back to zero.
 */
export interface DeadLetterAlertState {
  depth: number;
  /** When the depth was last seen leaving zero; undefined while it is zero. */
  nonZeroSince?: string;
  alerting: boolean;
}

export const initialDeadLetterAlertState: DeadLetterAlertState = { depth: 0, alerting: false };

export function nextDeadLetterAlertState(
  previous: DeadLetterAlertState,
  depth: number,
  now: Date,
  alertAfterMs: number,
): { state: DeadLetterAlertState; transition?: 'raised' | 'cleared' } {
  if (depth <= 0) {
    return { state: { depth: 0, alerting: false }, transition: previous.alerting ? 'cleared' : undefined };
  }
  const since = previous.nonZeroSince ?? now.toISOString();
  const overdue = now.getTime() - new Date(since).getTime() > alertAfterMs;
  const alerting = previous.alerting || overdue;
  return {
    state: { depth, nonZeroSince: since, alerting },
    transition: alerting && !previous.alerting ? 'raised' : undefined,
  };
}
