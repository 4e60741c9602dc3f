import type { Clock } from '../../../platform/clock.js';
import { keyedTransaction, type KeyedTransactionOptions } from '../../../platform/idempotency/effect-store.js';
import type { Db, Tx } from '../../../platform/db/database.js';
import { actorOf } from '../assist/assist.logic.js';
import { loadTenantProfile, type TenantProfile } from '../assist/assist.repo.js';
import type { AdminCaller } from '../admin-caller.js';
import type { AuditSink } from './audit.sink.js';

/** Where an audited change is written; the clock stamps its Idempotency-Key record. */
export interface ChangeStore {
  db: Db;
  audit: AuditSink;
  clock: Clock;
}

/** keyedTransaction's options on the subgraph's clock, so a keyed effect expires on the time the use case sees. */
export function onClock(clock: Clock): KeyedTransactionOptions {
  return { clock };
}

export interface AuditedChange<T> {
  action: string;
  target: (value: T) => { type: string; id: string };
  change: (tx: Tx, profile: TenantProfile) => Promise<T>;
  /** Ids, codes, hashes and counts of the change; never patient or output text. */
  details: (value: T) => Record<string, unknown>;
}

/**
 * One admin change and its audit event `audit.ai.<action>` in one transaction: the event exists if
 * and only if the change does. The tenant profile (retention class, residency of the event) is
 * read before the transaction opens, so the transaction holds its connection only for the change.
 */
export async function auditedChange<T>(deps: ChangeStore, caller: AdminCaller, spec: AuditedChange<T>): Promise<T> {
  const profile = await loadTenantProfile(deps.db, caller.tenantId);
  return keyedTransaction(
    deps.db,
    caller.effect,
    async (tx) => {
      const value = await spec.change(tx, profile);
      await deps.audit.record(tx, {
        action: spec.action,
        tenantId: caller.tenantId,
        actor: actorOf(caller.subject),
        target: spec.target(value),
        details: spec.details(value),
        retentionClass: profile.retentionClass,
        dataResidency: profile.dataResidency,
        traceparent: caller.traceparent,
        requestId: caller.requestId,
      });
      return value;
    },
    onClock(deps.clock),
  );
}
